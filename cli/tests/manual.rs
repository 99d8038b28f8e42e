//! The tool's manual page (`doc/grouptimeout.1`) and shell completions (`doc/completions/`) against its `--help`:
//! every option `--help` lists is in each of them, and they name no other, so that none can drift from the tool.
//! Where the shell (or groff) is installed, the files are also run: the man page renders without a warning, and
//! the bash and fish completions complete options, signals and the command. The man page's JOB BOUNDARIES say what
//! `--help` says (`tests/help_modes.rs` checks `--help`'s claims against the tool's behaviour): the same boundaries,
//! each for the same callers and with the same escapes.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use grouptimeout::GroupCommandExt;

mod common;

const BIN: &str = env!("CARGO_BIN_EXE_grouptimeout");
/// No run of a shell or of groff may take longer than this: a hung one fails the test instead of hanging it.
const RUN_LIMIT: Duration = Duration::from_secs(20);

/// Options as written: `-s` and `--signal` (an argument's `=VALUE` cut off).
type Options = BTreeSet<String>;

/// The file `name` of the repository.
fn file(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(name);
    fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Runs `program` with `args` (bounded by `RUN_LIMIT`) and returns its standard output; fails on a non-zero exit or
/// on anything written to standard error.
fn output(program: &str, args: &[&str]) -> String {
    let captured = Command::new(program)
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("LC_ALL", "C")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn_group()
        .unwrap()
        .wait_with_output_timeout(RUN_LIMIT)
        .unwrap();
    let stdout = String::from_utf8(captured.stdout).unwrap();
    let stderr = String::from_utf8_lossy(&captured.stderr);
    assert!(
        !captured.outcome.timed_out() && captured.outcome.status().success() && stderr.is_empty(),
        "{program} {args:?}: {:?}\nstdout: {stdout}\nstderr: {stderr}",
        captured.outcome
    );
    stdout
}

/// The options at the start of `line` (`-s, --signal=SIGNAL  text` gives `-s` and `--signal`).
fn leading_options(line: &str, into: &mut Options) {
    for word in line.split_whitespace() {
        let option = word
            .trim_end_matches(',')
            .split('=')
            .next()
            .unwrap_or_default();
        if option.len() < 2 || !option.starts_with('-') {
            break;
        }
        into.insert(option.to_string());
    }
}

/// The options `--help` lists: its indented lines that start with an option.
fn help_options() -> Options {
    let mut options = Options::new();
    for line in output(BIN, &["--help"]).lines() {
        if line.starts_with("  ") && line.trim_start().starts_with('-') {
            leading_options(line.trim_start(), &mut options);
        }
    }
    options
}

/// The options of the man page: the tags (`.TP` then `\fB\-s\fR, \fB\-\-signal\fR=...`) of its lists.
fn man_options(page: &str) -> Options {
    let mut options = Options::new();
    let mut tag = false;
    for line in page.lines() {
        if tag && line.starts_with("\\fB\\-") {
            let plain = line
                .replace("\\fB", "")
                .replace("\\fR", "")
                .replace("\\fI", "")
                .replace("\\-", "-");
            leading_options(&plain, &mut options);
        }
        tag = line == ".TP";
    }
    options
}

/// The options of the bash completion: its `local options="..."` line.
fn bash_options(script: &str) -> Options {
    let line = script
        .lines()
        .find_map(|l| l.trim().strip_prefix("local options=\""))
        .expect("a line local options=\"...\"");
    line.trim_end_matches('"')
        .split_whitespace()
        .map(String::from)
        .collect()
}

/// The options of the zsh completion: in each `_arguments` spec (the lines that start with `'`), the names before
/// the description in brackets, without the exclusion lists in parentheses.
fn zsh_options(script: &str) -> Options {
    let mut options = Options::new();
    for line in script
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with('\''))
    {
        let mut names = String::new();
        let mut depth = 0;
        for c in line.chars().take_while(|&c| c != '[') {
            match c {
                '(' => depth += 1,
                ')' => depth -= 1,
                _ if depth == 0 => names.push(c),
                _ => {}
            }
        }
        for name in names.split(['{', '}', ',', '\'', ' ', ':']) {
            let name = name.trim_end_matches(['+', '=']);
            if name.len() > 1 && name.starts_with('-') {
                options.insert(name.to_string());
            }
        }
    }
    options
}

/// The options of the fish completion: `-s X` and `-l NAME` of its `complete -c grouptimeout` lines.
fn fish_options(script: &str) -> Options {
    let mut options = Options::new();
    for line in script
        .lines()
        .filter(|l| l.starts_with("complete -c grouptimeout "))
    {
        let words: Vec<&str> = line.split_whitespace().collect();
        for pair in words.windows(2).filter(|p| !p[1].starts_with('-')) {
            match pair[0] {
                "-s" => options.insert(format!("-{}", pair[1])),
                "-l" => options.insert(format!("--{}", pair[1])),
                _ => false,
            };
        }
    }
    options
}

#[test]
fn man_page_and_completions_list_the_options_of_help() {
    let help = help_options();
    // The parse itself is checked: a change that lost every option would compare empty sets.
    for option in [
        "-s",
        "--signal",
        "-k",
        "--kill-after",
        "--leave-running",
        "--help",
        "--version",
    ] {
        assert!(help.contains(option), "--help lacks {option}: {help:?}");
    }
    let listed = [
        (
            "doc/grouptimeout.1",
            man_options(&file("doc/grouptimeout.1")),
        ),
        (
            "doc/completions/grouptimeout.bash",
            bash_options(&file("doc/completions/grouptimeout.bash")),
        ),
        (
            "doc/completions/_grouptimeout",
            zsh_options(&file("doc/completions/_grouptimeout")),
        ),
        (
            "doc/completions/grouptimeout.fish",
            fish_options(&file("doc/completions/grouptimeout.fish")),
        ),
    ];
    for (name, options) in listed {
        let missing: Vec<_> = help.difference(&options).collect();
        let unknown: Vec<_> = options.difference(&help).collect();
        assert!(
            missing.is_empty() && unknown.is_empty(),
            "{name}: lacks {missing:?} of --help, and names {unknown:?}, which --help does not"
        );
    }
}

#[test]
fn man_page_names_this_version_and_renders_cleanly() {
    let page = file("doc/grouptimeout.1");
    let title = page
        .lines()
        .find(|l| l.starts_with(".TH "))
        .expect("a .TH line");
    let version = concat!("\"grouptimeout ", env!("CARGO_PKG_VERSION"), "\"");
    assert!(title.contains(version), "{title}: not {version}");
    if common::have(
        "man_page_names_this_version_and_renders_cleanly",
        "groff",
        "--version",
    ) {
        // -ww: every warning; output nothing (-z), so that only the warnings come out, on stderr.
        output(
            "groff",
            &["-man", "-ww", "-z", "-Tutf8", "doc/grouptimeout.1"],
        );
        let text = output(
            "groff",
            &[
                "-man",
                "-Tutf8",
                "-P-c",
                "-P-b",
                "-P-u",
                "doc/grouptimeout.1",
            ],
        );
        for section in ["NAME", "SYNOPSIS", "OPTIONS", "EXIT STATUS", "SEE ALSO"] {
            assert!(
                text.lines().any(|l| l == section),
                "no section {section}:\n{text}"
            );
        }
    }
}

/// A boundary's claims: which callers get it, and the words of what escapes it, from a fixed vocabulary (the words
/// `tests/help_modes.rs` keys on).
#[derive(Debug, PartialEq, Eq)]
struct Boundary {
    callers: BTreeSet<&'static str>,
    escapes: BTreeSet<&'static str>,
}

/// The words of a caller (in the text before an entry's first `:`, split at `, or ` and `, and `).
const CALLERS: [(&str, &str); 5] = [
    ("as root", "root"),
    ("delegated", "delegated cgroup"),
    ("any other user", "any other user"),
    ("in a container", "root in a container"),
    ("rlimit_nproc", "RLIMIT_NPROC"),
];

/// The words of an escape clause (after `escapes:`).
const ESCAPES: [&str; 9] = [
    "moved out",
    "left the group",
    "environment",
    "env -i",
    "setuid",
    "ssh-agent",
    "kills the keeper",
    "lineage",
    "nothing",
];

/// The claims of one entry's text (`WHO: WHAT. Escapes: CLAUSE`, any case).
fn boundary(text: &str) -> Boundary {
    let text = text.to_lowercase();
    let (who, rest) = text.split_once(':').unwrap_or((&text, ""));
    let clause = rest.split_once("escapes:").map_or("", |(_, c)| c);
    let parts: Vec<String> = who
        .replace(", and ", ", or ")
        .split(", or ")
        .map(|p| p.trim().to_string())
        .collect();
    let callers = CALLERS
        .iter()
        .filter(|(word, _)| {
            parts.iter().any(|p| match *word {
                "as root" => p == "as root",
                _ => p.contains(word),
            })
        })
        .map(|&(_, kind)| kind)
        .collect();
    let escapes = ESCAPES.into_iter().filter(|w| clause.contains(w)).collect();
    Boundary { callers, escapes }
}

/// `--help`'s boundaries: its lines `  MODE  TEXT` (MODE a lowercase word), with the deeper indented lines after
/// each; and the rest of that paragraph (from the line before the first entry to the blank line after the last).
fn help_boundaries() -> (BTreeMap<String, Boundary>, String) {
    let help = output(BIN, &["--help"]);
    let lines: Vec<&str> = help.lines().collect();
    let mut entries: Vec<(String, String)> = Vec::new();
    let mut rest = String::new();
    let mut open = false;
    for (i, line) in lines.iter().enumerate() {
        let indent = line.len() - line.trim_start().len();
        let first = line.split_whitespace().next().unwrap_or_default();
        if indent == 2
            && first.chars().all(|c| c.is_ascii_lowercase())
            && line[2 + first.len()..].starts_with("  ")
        {
            if entries.is_empty() && i > 0 {
                // The lines of the paragraph before the list.
                let start = lines[..i]
                    .iter()
                    .rposition(|l| l.is_empty())
                    .map_or(0, |b| b + 1);
                rest.push_str(&lines[start..i].join(" "));
            }
            entries.push((first.to_string(), line[2 + first.len()..].to_string()));
            open = true;
        } else if open && indent > 2 {
            let last = entries.last_mut().unwrap();
            last.1.push(' ');
            last.1.push_str(line.trim());
        } else if open && !line.is_empty() {
            // The lines after the list, up to the blank line.
            let end = lines[i..]
                .iter()
                .position(|l| l.is_empty())
                .map_or(lines.len(), |e| i + e);
            rest.push(' ');
            rest.push_str(&lines[i..end].join(" "));
            break;
        } else {
            open = false;
        }
    }
    let entries = entries
        .into_iter()
        .map(|(mode, text)| (mode, boundary(&text)))
        .collect();
    (entries, rest)
}

/// A man page line as plain text: a font macro (`.B`, `.BR`, ...) by its words (joined without spaces where it
/// alternates fonts), escapes (`\fB`, `\-`) removed; other requests give nothing.
fn roff_text(line: &str) -> String {
    let plain = |s: &str| {
        s.replace("\\fB", "")
            .replace("\\fR", "")
            .replace("\\fI", "")
            .replace("\\-", "-")
    };
    let Some(request) = line.strip_prefix('.') else {
        return plain(line);
    };
    let (name, args) = request.split_once(' ').unwrap_or((request, ""));
    let mut words = Vec::new();
    let mut quoted = false;
    let mut word = String::new();
    for c in args.chars() {
        match c {
            '"' => quoted = !quoted,
            ' ' if !quoted => {
                if !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                }
            }
            _ => word.push(c),
        }
    }
    if !word.is_empty() {
        words.push(word);
    }
    match name {
        "B" | "I" => plain(&words.join(" ")),
        "BR" | "RB" | "IR" | "RI" | "BI" | "IB" => plain(&words.concat()),
        _ => String::new(),
    }
}

/// The man page's JOB BOUNDARIES: its `.TP` entries (the tag `.B MODE`, then the text up to the next `.TP`, `.PP`
/// or `.SH`), and the rest of the section's text.
fn man_boundaries(page: &str) -> (BTreeMap<String, Boundary>, String) {
    let section: Vec<&str> = page
        .lines()
        .skip_while(|l| *l != ".SH \"JOB BOUNDARIES\"")
        .skip(1)
        .take_while(|l| !l.starts_with(".SH"))
        .collect();
    assert!(
        !section.is_empty(),
        "the man page has no section JOB BOUNDARIES"
    );
    let mut entries: Vec<(String, String)> = Vec::new();
    let mut rest = String::new();
    let mut in_entry = false;
    let mut tag = false;
    for line in section {
        if tag {
            let mode = line.strip_prefix(".B ").expect("a .TP tag .B MODE");
            entries.push((mode.to_string(), String::new()));
            tag = false;
            in_entry = true;
        } else if line == ".TP" {
            tag = true;
        } else if line == ".PP" {
            in_entry = false;
        } else {
            let into = if in_entry {
                &mut entries.last_mut().unwrap().1
            } else {
                &mut rest
            };
            into.push(' ');
            into.push_str(&roff_text(line));
        }
    }
    let entries = entries
        .into_iter()
        .map(|(mode, text)| (mode, boundary(&text)))
        .collect();
    (entries, rest)
}

#[test]
fn man_page_says_what_help_says_of_the_job_boundaries() {
    let (help, help_rest) = help_boundaries();
    // The parse itself is checked: a change that lost the list would compare empty maps.
    assert_eq!(
        help.keys().collect::<Vec<_>>(),
        ["cgroup", "lineage", "reaper"]
    );
    for (mode, claims) in &help {
        assert!(
            !claims.callers.is_empty() && !claims.escapes.is_empty(),
            "--help's {mode}: no caller, or nothing said of what escapes: {claims:?}"
        );
    }
    let (man, man_rest) = man_boundaries(&file("doc/grouptimeout.1"));
    assert_eq!(
        man, help,
        "the man page's JOB BOUNDARIES (left) do not say what --help says (right)"
    );
    // The sentences around the list: what -v says, --foreground, and the other systems.
    for words in [
        "-v",
        "why, when it is not the cgroup",
        "Elsewhere",
        "only the group is reached",
        "--foreground",
        "every orphan",
    ] {
        for (name, text) in [("--help", &help_rest), ("the man page", &man_rest)] {
            let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
            assert!(
                flat.contains(words),
                "{name} lacks {words:?} around its boundaries: {flat}"
            );
        }
    }
}

/// The bash completion, run in bash as bash runs it for the words typed so far.
fn bash_completes(typed: &str) -> Vec<String> {
    let script = "source doc/completions/grouptimeout.bash
        read -ra COMP_WORDS <<<\"$1\"
        [[ $1 == *' ' ]] && COMP_WORDS+=('')
        COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
        _grouptimeout
        printf '%s\\n' \"${COMPREPLY[@]}\"";
    output("bash", &["-c", script, "bash", typed])
        .lines()
        .filter(|l| !l.is_empty())
        .map(String::from)
        .collect()
}

#[test]
fn bash_completes_options_signals_and_the_command() {
    if !common::have(
        "bash_completes_options_signals_and_the_command",
        "bash",
        "--version",
    ) {
        return;
    }
    assert_eq!(bash_completes("grouptimeout --sig"), ["--signal"]);
    assert_eq!(bash_completes("grouptimeout --kill"), ["--kill-after"]);
    assert!(bash_completes("grouptimeout -s TE").contains(&"TERM".to_string()));
    assert!(bash_completes("grouptimeout --signal SIGKI").contains(&"SIGKILL".to_string()));
    // After DURATION, the command: a name of PATH, not an option.
    assert!(bash_completes("grouptimeout -k 1 -s KILL 5 ech").contains(&"echo".to_string()));
    assert!(bash_completes("grouptimeout 5 --")
        .iter()
        .all(|c| c != "--signal"));
    // A duration is not completed.
    assert!(bash_completes("grouptimeout -k ").is_empty());
}

#[test]
fn zsh_completion_parses() {
    if common::have("zsh_completion_parses", "zsh", "--version") {
        output("zsh", &["-n", "doc/completions/_grouptimeout"]);
    }
}

/// The fish completion, as fish completes the words typed so far.
fn fish_completes(typed: &str) -> Vec<String> {
    let script = format!("source doc/completions/grouptimeout.fish; complete -C '{typed}'");
    output("fish", &["--no-config", "-c", &script])
        .lines()
        .map(|l| l.split('\t').next().unwrap_or_default().to_string())
        .collect()
}

#[test]
fn fish_completes_options_signals_and_the_command() {
    if !common::have(
        "fish_completes_options_signals_and_the_command",
        "fish",
        "--version",
    ) {
        return;
    }
    output(
        "fish",
        &["--no-execute", "doc/completions/grouptimeout.fish"],
    );
    assert_eq!(fish_completes("grouptimeout --sig"), ["--signal"]);
    assert!(fish_completes("grouptimeout -s TE").contains(&"TERM".to_string()));
    assert!(fish_completes("grouptimeout -k 1 5 ech").contains(&"echo".to_string()));
    // After DURATION, the command's words: no option of ours.
    assert!(!fish_completes("grouptimeout 5 --sig").contains(&"--signal".to_string()));
}
