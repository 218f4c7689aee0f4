//! One partition's log: the batches in offset order, in memory, and optionally the file that
//! keeps them across restarts.

use std::io;
use std::path::Path;

use bytes::Bytes;

use super::batch::Batch;
use super::error::LogError;
use super::frame::{self, AppendFile};

/// One partition: batches in offset order, from the log start offset to the end offset.
///
/// Nothing is ever removed (no retention, no compaction): the log start offset stays 0.
#[derive(Debug, Default)]
pub(crate) struct Partition {
    batches: Vec<Batch>,
    log_start: i64,
    end: i64,
    /// Where appends also go, with `--data-dir`.
    file: Option<AppendFile>,
}

/// What [`Partition::read`] returned: whole batches, and where the log stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ReadSlice {
    /// The batches, in order; the first holds the offset asked for.
    pub(crate) batches: Vec<Bytes>,
    /// Their total size.
    pub(crate) bytes: usize,
    /// The log start offset.
    pub(crate) log_start: i64,
    /// The end offset (the high watermark: the offset the next record gets).
    pub(crate) end: i64,
}

impl Partition {
    /// An empty partition kept in memory only.
    pub(crate) fn in_memory() -> Self {
        Self::default()
    }

    /// The partition stored in `path`: reads every intact batch back (truncating a damaged
    /// tail with a warning) and appends after them. `fresh` starts the file empty (a topic just
    /// created, whose name an older file may still carry).
    pub(crate) fn open(path: &Path, fresh: bool) -> io::Result<Self> {
        let mut partition = Self::default();
        if !fresh {
            let len = frame::recover(path, |payload| {
                let batch = Batch::parse(payload).map_err(|e| e.to_string())?;
                if batch.base_offset() != partition.end {
                    return Err(format!(
                        "a batch at offset {} where {} was expected",
                        batch.base_offset(),
                        partition.end
                    ));
                }
                partition.push(batch);
                Ok(())
            })?;
            partition.file = Some(AppendFile::open(path, len, false)?);
        } else {
            partition.file = Some(AppendFile::open(path, 0, true)?);
        }
        Ok(partition)
    }

    fn push(&mut self, batch: Batch) {
        self.end = batch.last_offset() + 1;
        self.batches.push(batch);
    }

    /// The log start offset (always 0: nothing is deleted).
    pub(crate) fn log_start(&self) -> i64 {
        self.log_start
    }

    /// The end offset: the offset the next record gets (the high watermark, as every append
    /// is committed at once on a single node).
    pub(crate) fn end(&self) -> i64 {
        self.end
    }

    /// Appends `batch` at the end offset (its base offset rewritten), to the file first when
    /// there is one. Returns the offset of its first record.
    ///
    /// # Errors
    /// [`LogError::Storage`] when the file write fails; the log is unchanged.
    pub(crate) fn append(&mut self, batch: &Batch) -> Result<i64, LogError> {
        let base = self.end;
        let stored = batch.with_base_offset(base);
        if let Some(file) = &mut self.file {
            file.append(&stored.bytes)
                .map_err(|e| LogError::Storage(e.to_string()))?;
        }
        self.push(stored);
        Ok(base)
    }

    /// Whole batches from the one holding `from`, up to `max_bytes` in total, but always the
    /// first one (so a batch bigger than `max_bytes` can still be read, as Kafka does). At the
    /// end offset the answer is empty.
    ///
    /// # Errors
    /// [`LogError::OffsetOutOfRange`] when `from` is below the log start or beyond the end.
    pub(crate) fn read(&self, from: i64, max_bytes: usize) -> Result<ReadSlice, LogError> {
        if from < self.log_start || from > self.end {
            return Err(LogError::OffsetOutOfRange {
                offset: from,
                log_start: self.log_start,
                end: self.end,
            });
        }
        let first = self.batches.partition_point(|b| b.last_offset() < from);
        let mut slice = ReadSlice {
            batches: Vec::new(),
            bytes: 0,
            log_start: self.log_start,
            end: self.end,
        };
        for batch in &self.batches[first..] {
            if !slice.batches.is_empty() && slice.bytes + batch.len() > max_bytes {
                break;
            }
            slice.bytes += batch.len();
            slice.batches.push(batch.bytes.clone());
        }
        Ok(slice)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::batch::tests::encode;

    fn batch(values: &[Option<&str>]) -> Batch {
        Batch::from_produce(encode(values)).expect("valid")
    }

    #[test]
    fn appends_take_consecutive_offsets_and_reads_return_whole_batches() {
        let mut p = Partition::in_memory();
        assert_eq!(p.append(&batch(&[Some("a"), Some("b")])), Ok(0));
        assert_eq!(p.append(&batch(&[None])), Ok(2));
        assert_eq!(p.append(&batch(&[Some("d")])), Ok(3));
        assert_eq!(p.end(), 4);
        // Offset 1 lies in the first batch, which comes back whole.
        let read = p.read(1, usize::MAX).expect("read");
        assert_eq!(read.batches.len(), 3);
        assert_eq!(
            Batch::parse(read.batches[0].clone()).map(|b| b.base_offset()),
            Ok(0)
        );
        assert_eq!(read.end, 4);
        assert!(
            p.read(4, usize::MAX)
                .expect("at the end")
                .batches
                .is_empty()
        );
    }

    #[test]
    fn max_bytes_limits_a_read_but_one_batch_always_comes() {
        let mut p = Partition::in_memory();
        p.append(&batch(&[Some("aaaa")])).expect("append");
        p.append(&batch(&[Some("bbbb")])).expect("append");
        let one = p.read(0, 1).expect("read");
        assert_eq!(one.batches.len(), 1);
        let size = one.bytes;
        assert_eq!(p.read(0, size * 2).expect("read").batches.len(), 2);
        assert_eq!(p.read(0, size * 2 - 1).expect("read").batches.len(), 1);
    }

    #[test]
    fn offsets_outside_the_log_are_out_of_range() {
        let mut p = Partition::in_memory();
        p.append(&batch(&[Some("a")])).expect("append");
        for from in [-1, 2] {
            assert_eq!(
                p.read(from, 100),
                Err(LogError::OffsetOutOfRange {
                    offset: from,
                    log_start: 0,
                    end: 1
                })
            );
        }
    }
}
