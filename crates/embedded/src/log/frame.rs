//! Entries on disk: every file under the data directory is a sequence of frames, each
//!
//! ```text
//! length u32 (big-endian, bytes of payload) | CRC-32C u32 of the payload | payload
//! ```
//!
//! appended with a single write. A crash can leave the last frame half written (a torn tail);
//! [`recover`] reads a file back, keeps every frame up to the first one that is short, fails its
//! checksum, or fails the caller's own check, and truncates the file there with a warning.
//! Nothing after a bad frame is trusted, as Kafka's log recovery truncates at the first invalid
//! batch.
//!
//! Appends reach the operating system before the request that caused them is answered, but are
//! not fsynced: a killed process loses nothing, a power failure can lose the latest appends
//! (as Kafka with its default `log.flush.*` settings, which leaves durability to replication).

use std::fs::OpenOptions;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use bytes::Bytes;

/// Bytes in front of every payload: its length and its checksum.
pub(crate) const FRAME_HEADER: usize = 8;

/// `payload` framed: length, CRC-32C, payload.
pub(crate) fn frame(payload: &[u8]) -> Result<Vec<u8>, io::Error> {
    let length = u32::try_from(payload.len()).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("an entry of {} bytes is too large to store", payload.len()),
        )
    })?;
    let mut framed = Vec::with_capacity(FRAME_HEADER + payload.len());
    framed.extend_from_slice(&length.to_be_bytes());
    framed.extend_from_slice(&crc32c::crc32c(payload).to_be_bytes());
    framed.extend_from_slice(payload);
    Ok(framed)
}

/// Reads the intact frames of `path` (a missing file has none), handing each payload to
/// `accept` in order; at the first frame that is torn, fails its checksum or that `accept`
/// refuses, the file is truncated to the frames before it, with a warning naming the file, the
/// position and the reason. Returns the length of what was kept.
///
/// # Errors
/// Only when the file cannot be read or truncated: a damaged tail is not an error.
pub(crate) fn recover(
    path: &Path,
    mut accept: impl FnMut(Bytes) -> Result<(), String>,
) -> io::Result<u64> {
    let data = match std::fs::read(path) {
        Ok(data) => Bytes::from(data),
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(e),
    };
    let mut at = 0usize;
    let problem = loop {
        let rest = &data[at..];
        if rest.is_empty() {
            break None;
        }
        let Some(header) = rest.first_chunk::<FRAME_HEADER>() else {
            break Some(format!("a torn frame header ({} bytes)", rest.len()));
        };
        let length = u32::from_be_bytes([header[0], header[1], header[2], header[3]]) as usize;
        let crc = u32::from_be_bytes([header[4], header[5], header[6], header[7]]);
        if rest.len() - FRAME_HEADER < length {
            break Some(format!(
                "a torn frame ({length} bytes announced, {} present)",
                rest.len() - FRAME_HEADER
            ));
        }
        let start = at + FRAME_HEADER;
        let payload = data.slice(start..start + length);
        if crc32c::crc32c(&payload) != crc {
            break Some("a frame whose CRC-32C does not match".to_string());
        }
        if let Err(why) = accept(payload) {
            break Some(why);
        }
        at = start + length;
    };
    if let Some(reason) = problem {
        let dropped = data.len() - at;
        tracing::warn!(
            file = %path.display(),
            position = at,
            dropped_bytes = dropped,
            %reason,
            "truncating a damaged tail (an interrupted write); the entries before it are kept"
        );
        let file = OpenOptions::new().write(true).open(path)?;
        file.set_len(at as u64)?;
        file.sync_all()?;
    }
    Ok(at as u64)
}

/// A file that only grows by whole frames. It holds no open file between appends (each opens,
/// writes and closes it), so a thousand topics do not take a thousand file descriptors from
/// the connections.
#[derive(Debug)]
pub(crate) struct AppendFile {
    path: PathBuf,
    /// Bytes of whole frames in the file.
    len: u64,
    /// Set when a failed append could not be undone: the file may end in a partial frame, so
    /// nothing more is appended (it would be lost behind that frame at the next start).
    broken: Option<String>,
}

impl AppendFile {
    /// Creates `path` if missing and appends after its first `len` bytes, which [`recover`]
    /// has checked (anything after them is cut). `truncate` starts it empty instead.
    pub(crate) fn open(path: &Path, len: u64, truncate: bool) -> io::Result<Self> {
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        let len = if truncate { 0 } else { len };
        if file.metadata()?.len() != len {
            file.set_len(len)?;
        }
        Ok(Self {
            path: path.to_path_buf(),
            len,
            broken: None,
        })
    }

    /// Appends `payload` as one frame, with one write. On failure the file is cut back to its
    /// previous length, so a later append does not land behind a partial frame.
    ///
    /// # Errors
    /// The write failed (the entry is not stored), or an earlier failure could not be undone.
    pub(crate) fn append(&mut self, payload: &[u8]) -> io::Result<()> {
        if let Some(why) = &self.broken {
            return Err(io::Error::other(why.clone()));
        }
        let framed = frame(payload)?;
        let mut file = OpenOptions::new().append(true).open(&self.path)?;
        match file.write_all(&framed) {
            Ok(()) => {
                self.len += framed.len() as u64;
                Ok(())
            }
            Err(error) => {
                if let Err(undo) = file.set_len(self.len) {
                    let why = format!(
                        "{}: an append failed ({error}) and could not be undone ({undo}); restart \
                         the coordinator to recover the file",
                        self.path.display()
                    );
                    tracing::error!("{why}");
                    self.broken = Some(why);
                }
                Err(error)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "kroupier-frame-{name}-{}-{}",
            std::process::id(),
            rand::random::<u32>()
        ));
        std::fs::create_dir_all(&dir).expect("temp dir");
        dir
    }

    fn read_all(path: &Path) -> Vec<Bytes> {
        let mut out = Vec::new();
        recover(path, |p| {
            out.push(p);
            Ok(())
        })
        .expect("recover");
        out
    }

    #[test]
    fn frames_come_back_in_order_and_a_missing_file_is_empty() {
        let dir = temp_dir("order");
        let path = dir.join("a.log");
        assert!(read_all(&path).is_empty());
        let mut file = AppendFile::open(&path, 0, false).expect("open");
        file.append(b"one").expect("append");
        file.append(b"").expect("append");
        file.append(b"three").expect("append");
        drop(file);
        assert_eq!(read_all(&path), vec![&b"one"[..], &b""[..], &b"three"[..]]);
        std::fs::remove_dir_all(dir).ok();
    }

    #[test]
    fn a_torn_tail_is_truncated_and_appends_continue_after_the_last_whole_frame() {
        let dir = temp_dir("torn");
        let path = dir.join("a.log");
        let mut file = AppendFile::open(&path, 0, false).expect("open");
        file.append(b"kept").expect("append");
        file.append(b"torn away").expect("append");
        drop(file);
        let full = std::fs::metadata(&path).expect("meta").len();
        for cut in [1, 5, 9, 12] {
            let f = OpenOptions::new().write(true).open(&path).expect("open");
            f.set_len(full - cut).expect("cut");
            let kept = recover(&path, |_| Ok(())).expect("recover");
            assert_eq!(kept, (FRAME_HEADER + 4) as u64, "cut {cut}");
            assert_eq!(std::fs::metadata(&path).expect("meta").len(), kept);
            let mut file = AppendFile::open(&path, kept, false).expect("reopen");
            file.append(b"torn away").expect("append");
        }
        assert_eq!(read_all(&path), vec![&b"kept"[..], &b"torn away"[..]]);
        std::fs::remove_dir_all(dir).ok();
    }

    #[test]
    fn a_flipped_byte_or_a_refused_entry_ends_what_is_kept() {
        let dir = temp_dir("flip");
        let path = dir.join("a.log");
        let mut file = AppendFile::open(&path, 0, false).expect("open");
        for payload in [&b"a"[..], b"b", b"c"] {
            file.append(payload).expect("append");
        }
        drop(file);
        let mut data = std::fs::read(&path).expect("read");
        data[FRAME_HEADER * 2 + 1] ^= 0x40; // the payload of the second frame
        std::fs::write(&path, &data).expect("write");
        assert_eq!(read_all(&path), vec![&b"a"[..]]);
        let kept = recover(&path, |p| {
            if p == "a" {
                Err("refused".to_string())
            } else {
                Ok(())
            }
        })
        .expect("recover");
        assert_eq!(kept, 0);
        std::fs::remove_dir_all(dir).ok();
    }
}
