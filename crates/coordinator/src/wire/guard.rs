//! The pre-decode guard: walks a frame along a message's schema table and rejects any length
//! or element count that runs past the end of the frame, before kafka-protocol sees the bytes.
//!
//! kafka-protocol 0.18 reserves `Vec::with_capacity(count)` for whatever array count a frame
//! claims; a count of `i32::MAX` makes the allocator abort the whole process (not a panic, so
//! nothing can catch it). The guard walks every field the version carries, so when it accepts
//! a frame, every array element it claims is present in the frame: what kafka-protocol then
//! reserves is bounded by the frame's length, which the codec caps.
//!
//! The walk agrees with kafka-protocol's reading byte for byte (same varint rules, same
//! known-tagged-field handling) wherever it accepts, and is stricter elsewhere: a varint over
//! 32 bits, a negative length other than -1, or a known tagged field whose content does not
//! fill its declared size are rejected.

use super::error::{Problem, WireError};
use super::schema::{Field, Kind, Schema};

/// How a length prefix is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Width {
    /// int16, -1 = null (classic strings).
    Int16,
    /// int32, -1 = null (classic bytes and arrays).
    Int32,
    /// Unsigned varint of length + 1, 0 = null (flexible versions).
    Compact,
}

/// Where a length prefix sits in a frame (recorded for tests that corrupt each one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LengthPrefix {
    /// Byte offset of the prefix.
    pub(crate) offset: usize,
    /// Its encoding.
    pub(crate) width: Width,
    /// Its size in bytes.
    pub(crate) len: usize,
    /// Whether it counts array elements (rather than string or bytes length).
    pub(crate) is_array: bool,
}

/// Walks `schema` at `version` over `frame[start..]`; returns the offset where the message ends.
pub(crate) fn walk(
    schema: &'static Schema,
    version: i16,
    frame: &[u8],
    start: usize,
) -> Result<usize, WireError> {
    Walker::new(schema, version, frame, start, None).run()
}

/// [`walk`], recording every length prefix it reads.
#[cfg(test)]
pub(crate) fn walk_traced(
    schema: &'static Schema,
    version: i16,
    frame: &[u8],
    start: usize,
    trace: &mut Vec<LengthPrefix>,
) -> Result<usize, WireError> {
    Walker::new(schema, version, frame, start, Some(trace)).run()
}

struct Walker<'a, 't> {
    schema: &'static Schema,
    version: i16,
    flexible: bool,
    frame: &'a [u8],
    pos: usize,
    end: usize,
    trace: Option<&'t mut Vec<LengthPrefix>>,
}

impl<'a, 't> Walker<'a, 't> {
    fn new(
        schema: &'static Schema,
        version: i16,
        frame: &'a [u8],
        start: usize,
        trace: Option<&'t mut Vec<LengthPrefix>>,
    ) -> Self {
        Self {
            schema,
            version,
            flexible: schema.is_flexible(version),
            frame,
            pos: start.min(frame.len()),
            end: frame.len(),
            trace,
        }
    }

    fn run(mut self) -> Result<usize, WireError> {
        self.fields(self.schema.fields)?;
        Ok(self.pos)
    }

    fn remaining(&self) -> usize {
        self.end - self.pos
    }

    fn malformed(&self, field: &'static str, offset: usize, problem: Problem) -> WireError {
        WireError::Malformed {
            message: self.schema.name,
            version: self.version,
            field,
            offset,
            problem,
        }
    }

    fn fields(&mut self, fields: &'static [Field]) -> Result<(), WireError> {
        for f in fields {
            if f.tag.is_none() && f.versions.contains(self.version) {
                self.kind(f.name, f.kind)?;
            }
        }
        if self.flexible {
            self.tagged_section(fields)?;
        }
        Ok(())
    }

    fn kind(&mut self, name: &'static str, kind: Kind) -> Result<(), WireError> {
        match kind {
            Kind::Fixed(n) => self.skip(name, n),
            Kind::String => {
                let width = if self.flexible {
                    Width::Compact
                } else {
                    Width::Int16
                };
                self.blob(name, width)
            }
            Kind::ClassicString => self.blob(name, Width::Int16),
            Kind::Bytes => {
                let width = if self.flexible {
                    Width::Compact
                } else {
                    Width::Int32
                };
                self.blob(name, width)
            }
            Kind::Array(element) => {
                let width = if self.flexible {
                    Width::Compact
                } else {
                    Width::Int32
                };
                let count = self.length(name, width, true)?.unwrap_or(0);
                for _ in 0..count {
                    self.kind(name, *element)?;
                }
                Ok(())
            }
            Kind::Struct(fields) => self.fields(fields),
        }
    }

    /// A string or bytes: its length, then that many bytes.
    fn blob(&mut self, name: &'static str, width: Width) -> Result<(), WireError> {
        let len = self.length(name, width, false)?.unwrap_or(0);
        self.skip(name, len)
    }

    /// Reads a length prefix; `None` is null. Rejects lengths past the end of the frame.
    fn length(
        &mut self,
        name: &'static str,
        width: Width,
        is_array: bool,
    ) -> Result<Option<usize>, WireError> {
        let offset = self.pos;
        let raw: i64 = match width {
            Width::Int16 => i64::from(i16::from_be_bytes(self.take::<2>(name)?)),
            Width::Int32 => i64::from(i32::from_be_bytes(self.take::<4>(name)?)),
            Width::Compact => i64::from(self.varint(name)?) - 1,
        };
        if let Some(trace) = self.trace.as_deref_mut() {
            trace.push(LengthPrefix {
                offset,
                width,
                len: self.pos - offset,
                is_array,
            });
        }
        match raw {
            -1 => Ok(None),
            n if n < -1 => Err(self.malformed(name, offset, Problem::NegativeLength(n))),
            n => {
                let remaining = self.remaining();
                // An array element takes at least one byte here: every element kind in the
                // tables has a fixed field, a length prefix or a tagged-field count.
                match usize::try_from(n) {
                    Ok(len) if len <= remaining => Ok(Some(len)),
                    _ => Err(self.malformed(
                        name,
                        offset,
                        Problem::LengthExceedsRemaining {
                            claimed: n.unsigned_abs(),
                            remaining,
                        },
                    )),
                }
            }
        }
    }

    /// The tagged-field section that ends every struct in flexible versions.
    fn tagged_section(&mut self, fields: &'static [Field]) -> Result<(), WireError> {
        const SECTION: &str = "_tagged_fields";
        let offset = self.pos;
        let count = self.varint(SECTION)?;
        let remaining = self.remaining();
        if usize::try_from(count).map_or(true, |c| c > remaining) {
            return Err(self.malformed(
                SECTION,
                offset,
                Problem::LengthExceedsRemaining {
                    claimed: u64::from(count),
                    remaining,
                },
            ));
        }
        for _ in 0..count {
            let tag = self.varint(SECTION)?;
            let size_offset = self.pos;
            let size = self.varint(SECTION)?;
            let remaining = self.remaining();
            let size = match usize::try_from(size) {
                Ok(size) if size <= remaining => size,
                _ => {
                    return Err(self.malformed(
                        SECTION,
                        size_offset,
                        Problem::LengthExceedsRemaining {
                            claimed: u64::from(size),
                            remaining,
                        },
                    ));
                }
            };
            let known = fields
                .iter()
                .find(|f| f.tag == Some(tag) && f.versions.contains(self.version));
            match known {
                Some(f) => {
                    let start = self.pos;
                    let outer_end = self.end;
                    self.end = start + size;
                    self.kind(f.name, f.kind)?;
                    let used = self.pos - start;
                    self.end = outer_end;
                    if used != size {
                        return Err(self.malformed(
                            f.name,
                            start,
                            Problem::TaggedFieldSize {
                                tag,
                                declared: size,
                                used,
                            },
                        ));
                    }
                }
                None => self.skip(SECTION, size)?,
            }
        }
        Ok(())
    }

    /// An unsigned varint of at most 32 bits (at most 5 bytes).
    fn varint(&mut self, name: &'static str) -> Result<u32, WireError> {
        let offset = self.pos;
        let mut value: u32 = 0;
        for i in 0..5 {
            let [b] = self.take::<1>(name)?;
            if i == 4 && b > 0x0F {
                return Err(self.malformed(name, offset, Problem::VarintTooLong));
            }
            value |= u32::from(b & 0x7F) << (7 * i);
            if b < 0x80 {
                return Ok(value);
            }
        }
        Err(self.malformed(name, offset, Problem::VarintTooLong))
    }

    fn take<const N: usize>(&mut self, name: &'static str) -> Result<[u8; N], WireError> {
        let start = self.pos;
        self.skip(name, N)?;
        let mut out = [0u8; N];
        out.copy_from_slice(&self.frame[start..start + N]);
        Ok(out)
    }

    fn skip(&mut self, name: &'static str, n: usize) -> Result<(), WireError> {
        let remaining = self.remaining();
        if n > remaining {
            return Err(self.malformed(
                name,
                self.pos,
                Problem::Truncated {
                    needed: n,
                    remaining,
                },
            ));
        }
        self.pos += n;
        Ok(())
    }
}
