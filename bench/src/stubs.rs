//! TEMPORARY stand-ins until the set and the adapter are merged (not committed).
#![allow(dead_code, clippy::pedantic)]
pub mod grouptimeout_set {
    use grouptimeout::{GroupChild, Outcome};
    use std::io;
    use std::sync::mpsc;
    use std::time::Instant;
    pub enum Finished {
        Waited(Outcome),
    }
    pub struct JobSet<K> {
        tx: mpsc::Sender<(K, io::Result<Finished>)>,
        rx: mpsc::Receiver<(K, io::Result<Finished>)>,
        n: usize,
    }
    impl<K: Send + 'static> JobSet<K> {
        pub fn new() -> io::Result<Self> {
            let (tx, rx) = mpsc::channel();
            Ok(JobSet { tx, rx, n: 0 })
        }
        pub fn add(&mut self, k: K, mut c: GroupChild, d: Option<Instant>) -> io::Result<()> {
            let tx = self.tx.clone();
            self.n += 1;
            std::thread::spawn(move || {
                let o = match d {
                    Some(d) => c.wait_deadline(d),
                    None => c.wait().map(Outcome::Exited),
                };
                let _ = tx.send((k, o.map(Finished::Waited)));
            });
            Ok(())
        }
        pub fn next(&mut self) -> Option<(K, io::Result<Finished>)> {
            if self.n == 0 {
                return None;
            }
            self.n -= 1;
            self.rx.recv().ok()
        }
    }
}
pub mod grouptimeout_tokio {
    use grouptimeout::{GroupChild, Outcome};
    use std::io;
    pub async fn wait(mut c: GroupChild, d: Option<tokio::time::Instant>) -> io::Result<Outcome> {
        let d = d.unwrap().into_std();
        tokio::task::spawn_blocking(move || c.wait_deadline(d))
            .await
            .unwrap()
    }
}
