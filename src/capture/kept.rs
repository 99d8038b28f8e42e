//! The bytes kept from one captured stream, in bounded memory: everything up to the limit; past it, the head and a
//! ring buffer with the tail, joined (on request) by a marker that says how much was left out.

/// Bytes asked for by one `read(2)`, at least. A pipe holds 64 KiB unless resized, so one read usually empties it.
pub(super) const READ_SIZE: usize = 64 << 10;

/// The longest marker [`Kept::finish`] inserts (a `u64` has at most 20 digits).
const MARKER_MAX: usize = 64;

/// The bytes kept from one stream: everything up to the limit; past it, the head and a ring buffer with the tail.
pub(super) struct Kept {
    limit: usize,
    /// How many of the `limit` bytes are the head, once cut (at most `limit`).
    head: usize,
    /// Every byte read while the stream is within the limit (and at most one read past it); once cut, the head.
    pub(super) data: Vec<u8>,
    /// Once cut: a ring buffer of the last `limit - head` bytes, the oldest at `pos`.
    tail: Vec<u8>,
    pos: usize,
    /// Bytes read in all.
    total: u64,
}

impl Kept {
    pub(super) fn new(limit: usize, head: usize) -> Kept {
        Kept {
            limit,
            head: head.min(limit),
            data: Vec::new(),
            tail: Vec::new(),
            pos: 0,
            total: 0,
        }
    }

    pub(super) fn is_cut(&self) -> bool {
        self.total > self.limit as u64
    }

    /// Makes room for a read into `data` and returns how many bytes to ask for: at least [`READ_SIZE`], growing
    /// like a `Vec` but never past `limit + READ_SIZE`.
    pub(super) fn reserve(&mut self) -> usize {
        let (len, cap) = (self.data.len(), self.data.capacity());
        if cap - len < READ_SIZE {
            let room = self.limit.saturating_add(READ_SIZE).saturating_sub(len);
            self.data
                .reserve_exact(cap.max(READ_SIZE).min(room).max(READ_SIZE));
        }
        self.data.capacity() - self.data.len()
    }

    /// Accounts for `n` bytes just appended to `data`; cuts the stream if they took it past the limit.
    pub(super) fn appended(&mut self, n: usize) {
        self.total += n as u64;
        if self.data.len() > self.limit {
            let tail = self.limit - self.head;
            self.tail = self.data[self.data.len() - tail..].to_vec();
            self.pos = 0;
            self.data.truncate(self.head);
            self.data.reserve_exact(tail + MARKER_MAX);
        }
    }

    /// Once cut: counts `bytes` and keeps the last of them in the tail ring.
    pub(super) fn push_tail(&mut self, bytes: &[u8]) {
        self.total += bytes.len() as u64;
        let size = self.tail.len();
        if size == 0 {
            return;
        }
        let bytes = &bytes[bytes.len().saturating_sub(size)..];
        let first = (size - self.pos).min(bytes.len());
        self.tail[self.pos..self.pos + first].copy_from_slice(&bytes[..first]);
        self.tail[..bytes.len() - first].copy_from_slice(&bytes[first..]);
        self.pos = (self.pos + bytes.len()) % size;
    }

    /// The kept bytes, and how many were left out (0: none); with `marker`, a cut stream has the marker line between
    /// head and tail. See [which bytes are kept](crate::Captured#which-bytes-are-kept).
    pub(super) fn finish(mut self, marker: bool) -> (Vec<u8>, u64) {
        if !self.is_cut() {
            self.data.shrink_to_fit();
            return (self.data, 0);
        }
        let omitted = self.total - self.limit as u64;
        self.tail.rotate_left(self.pos);
        if marker {
            let marker = format!("\n[grouptimeout: {omitted} bytes omitted]\n");
            self.data.extend_from_slice(marker.as_bytes());
        }
        self.data.extend_from_slice(&self.tail);
        (self.data, omitted)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `chunks` the way `read_ready` does and returns the result, with the marker (and checks that without it
    /// the bytes are the same but for the marker).
    fn keep(limit: usize, chunks: &[&[u8]]) -> (Vec<u8>, bool) {
        keep_split(limit, limit / 2, chunks)
    }

    fn keep_split(limit: usize, head: usize, chunks: &[&[u8]]) -> (Vec<u8>, bool) {
        let (with_marker, omitted) = keep_with(limit, head, chunks, true);
        let (plain, omitted_too) = keep_with(limit, head, chunks, false);
        assert_eq!(omitted, omitted_too);
        if omitted == 0 {
            assert_eq!(with_marker, plain);
        } else {
            let line = format!("\n[grouptimeout: {omitted} bytes omitted]\n");
            let head = head.min(limit);
            assert_eq!(&with_marker[..head], &plain[..head]);
            assert_eq!(&with_marker[head..head + line.len()], line.as_bytes());
            assert_eq!(&with_marker[head + line.len()..], &plain[head..]);
            assert_eq!(plain.len(), limit);
        }
        (with_marker, omitted > 0)
    }

    fn keep_with(limit: usize, head: usize, chunks: &[&[u8]], marker: bool) -> (Vec<u8>, u64) {
        let mut kept = Kept::new(limit, head);
        for chunk in chunks {
            if kept.is_cut() {
                kept.push_tail(chunk);
            } else {
                kept.reserve();
                kept.data.extend_from_slice(chunk);
                kept.appended(chunk.len());
            }
        }
        kept.finish(marker)
    }

    #[test]
    fn within_the_limit_everything_is_kept() {
        assert_eq!(
            keep(10, &[b"0123", b"456789"]),
            (b"0123456789".to_vec(), false)
        );
        assert_eq!(keep(0, &[]), (Vec::new(), false));
        assert_eq!(keep(usize::MAX, &[b"abc"]), (b"abc".to_vec(), false));
    }

    #[test]
    fn past_the_limit_head_marker_tail() {
        let marker = |n: u64| format!("\n[grouptimeout: {n} bytes omitted]\n");
        let want = |head: &str, n, tail: &str| format!("{head}{}{tail}", marker(n)).into_bytes();
        assert_eq!(
            keep(10, &[b"0123456789x"]),
            (want("01234", 1, "6789x"), true)
        );
        assert_eq!(
            keep(5, &[b"abcdefgh", b"ij", b"klm"]),
            (want("ab", 8, "klm"), true)
        );
        assert_eq!(
            keep(5, &[b"ab", b"cdef", b"g", b"h"]),
            (want("ab", 3, "fgh"), true)
        );
        // Ring wrap-around with small pushes.
        let bytes: Vec<u8> = (0..200u8).collect();
        let chunks: Vec<&[u8]> = bytes.chunks(7).collect();
        let (got, cut) = keep(21, &chunks);
        assert!(cut);
        let mut expected = bytes[..10].to_vec();
        expected.extend_from_slice(marker(179).as_bytes());
        expected.extend_from_slice(&bytes[189..]);
        assert_eq!(got, expected);
        assert_eq!(keep(0, &[b"abc"]), (marker(3).into_bytes(), true));
        assert_eq!(
            keep(1, &[b"abc"]),
            (format!("{}c", marker(2)).into_bytes(), true)
        );
    }

    #[test]
    fn the_head_takes_what_it_was_given_of_the_limit() {
        let marker = |n: u64| format!("\n[grouptimeout: {n} bytes omitted]\n");
        let want = |head: &str, n, tail: &str| format!("{head}{}{tail}", marker(n)).into_bytes();
        let chunks: &[&[u8]] = &[b"0123", b"456789", b"abcdef"];
        assert_eq!(keep_split(10, 8, chunks), (want("01234567", 6, "ef"), true));
        assert_eq!(keep_split(10, 0, chunks), (want("", 6, "6789abcdef"), true));
        // A head larger than the limit is the limit: the first bytes only, no tail.
        assert_eq!(
            keep_split(10, 99, chunks),
            (want("0123456789", 6, ""), true)
        );
        assert_eq!(
            keep_split(10, 3, &[b"0123456789"]),
            (b"0123456789".to_vec(), false)
        );
    }
}
