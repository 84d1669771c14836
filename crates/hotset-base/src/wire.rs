//! The byte helpers every on-disk encoding of Hotset is built from: LEB128 varints,
//! length-prefixed bytes, and a bounds-checked reader.
//!
//! Owns: `put_varint`, `put_bytes`, `put_f32`, `Reader` and the error it reports,
//! [`RecordError`]. Never: know what the bytes mean (that is `record`, and `hotset-core`'s `change`
//! and `schema::codec`), panic on any input, or allocate for a count or length the input
//! cannot hold.

/// Bytes of a change record (or of anything inside one) that do not decode: what was cut
/// short or out of range, and where. Its text is the document engine's
/// `Error::BadChange`, which it becomes there.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("bad change record: {reason}")]
pub struct RecordError {
    /// What did not decode, and where.
    pub reason: String,
}

/// What every read of a [`Reader`] returns.
type Result<T, E = RecordError> = std::result::Result<T, E>;

/// Appends `value` as a LEB128 varint: seven bits a byte, lowest first, the high bit set
/// on every byte but the last.
pub fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// Appends `bytes` with their length first (a varint).
pub fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// A float as its IEEE bits, little-endian: exact, whatever the value.
pub fn put_f32(out: &mut Vec<u8>, value: f32) {
    out.extend_from_slice(&value.to_bits().to_le_bytes());
}

/// A double as its IEEE bits, little-endian: exact, -0 and infinities included.
pub fn put_f64(out: &mut Vec<u8>, value: f64) {
    out.extend_from_slice(&value.to_bits().to_le_bytes());
}

/// Reads an encoding front to back; every read checks bounds and names what was cut short,
/// where, and in what (`what`: "change", "index definition").
pub struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
    what: &'static str,
}

impl<'a> Reader<'a> {
    /// A reader at the start of `bytes`, which hold one `what` (named in its errors).
    pub fn new(bytes: &'a [u8], what: &'static str) -> Reader<'a> {
        Reader { bytes, at: 0, what }
    }

    /// An error saying `problem` at the reader's position, as the caller's error type (a
    /// decoder returning the document engine's `Error` fails with it unchanged).
    pub fn fail<T, E: From<RecordError>>(&self, problem: &str) -> Result<T, E> {
        Err(E::from(RecordError {
            reason: format!("{problem} at byte {} of a {}-byte {}", self.at, self.bytes.len(), self.what),
        }))
    }

    /// Whether every byte was read.
    pub fn done(&self) -> bool {
        self.at == self.bytes.len()
    }

    /// An error unless every byte was read: trailing bytes mean the reader and the writer
    /// disagree about the layout, which must never pass as a value.
    pub fn finish(&self) -> Result<()> {
        if self.done() { Ok(()) } else { self.fail(&format!("bytes left over after the {}", self.what)) }
    }

    /// The next byte.
    pub fn byte(&mut self) -> Result<u8> {
        let Some(&byte) = self.bytes.get(self.at) else {
            return self.fail(&format!("the {} ends early", self.what));
        };
        self.at += 1;
        Ok(byte)
    }

    /// A byte that must be 0 (false) or 1 (true).
    pub fn flag(&mut self, name: &str) -> Result<bool> {
        match self.byte()? {
            0 => Ok(false),
            1 => Ok(true),
            _ => self.fail(&format!("the {name} flag is neither 0 nor 1")),
        }
    }

    /// The next LEB128 varint; an error for one running over 64 bits.
    pub fn varint(&mut self) -> Result<u64> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = self.byte()?;
            // The tenth byte holds bit 63 only; any other bit of it would be shifted out.
            if shift == 63 && byte > 1 {
                return self.fail("a number runs over 64 bits");
            }
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        self.fail("a number runs over 64 bits")
    }

    /// The next float, as `put_f32` wrote it.
    pub fn f32(&mut self) -> Result<f32> {
        let end = self.at + 4;
        let Some(bytes) = self.bytes.get(self.at..end) else {
            return self.fail(&format!("the {} ends inside a number", self.what));
        };
        self.at = end;
        Ok(f32::from_bits(u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]])))
    }

    /// The next double, as `put_f64` wrote it.
    pub fn f64(&mut self) -> Result<f64> {
        let end = self.at + 8;
        let Some(bytes) = self.bytes.get(self.at..end) else {
            return self.fail(&format!("the {} ends inside a number", self.what));
        };
        self.at = end;
        Ok(f64::from_bits(u64::from_le_bytes(bytes.try_into().expect("eight bytes"))))
    }

    /// A count of items that take at least `min_bytes` each, refused when the rest of
    /// the input cannot hold that many (a corrupt count must not allocate).
    pub fn count(&mut self, min_bytes: usize, what: &str) -> Result<usize> {
        assert!(min_bytes >= 1, "every item takes a byte at least");
        let count = self.varint()?;
        if count > ((self.bytes.len() - self.at) / min_bytes) as u64 {
            return self.fail(&format!("a count of {what} larger than the {} holds", self.what));
        }
        Ok(count as usize)
    }

    /// The next length-prefixed bytes, borrowed from the input.
    pub fn bytes(&mut self) -> Result<&'a [u8]> {
        let len = self.varint()?;
        let end = usize::try_from(len).ok().and_then(|len| self.at.checked_add(len));
        match end {
            Some(end) if end <= self.bytes.len() => {
                let slice = &self.bytes[self.at..end];
                self.at = end;
                Ok(slice)
            }
            _ => self.fail("a length runs past the end"),
        }
    }

    /// The next length-prefixed bytes as UTF-8 text.
    pub fn text(&mut self) -> Result<&'a str> {
        let bytes = self.bytes()?;
        std::str::from_utf8(bytes).or_else(|_| self.fail("a name is not UTF-8"))
    }
}
