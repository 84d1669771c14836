//! The checksummed frame: one record of a WAL segment (and, later, of a snapshot file).
//!
//! ```text
//! offset 0      4         8          16
//!        | len  | crc32c  |   lsn    | payload (len bytes) |
//!          u32 LE  u32 LE    u64 LE
//!                 └── covers bytes [8, 16 + len): the lsn and the payload
//! ```
//!
//! Owns: the byte layout, encoding a frame and reading one back.
//!
//! Never: interprets payloads, does I/O, or trusts a length before checking it against
//! [`FRAME_PAYLOAD_BYTES_MAX`] and the bytes actually present.
//!
//! Invariants: a frame read back as [`FrameRead::Frame`] has a matching checksum, so its
//! length, lsn and payload are exactly what was encoded (a damaged length makes the checksum
//! cover the wrong bytes and fail). Encoding refuses payloads over the limit.

/// Bytes before the payload: length, checksum, lsn.
pub const FRAME_HEADER_BYTES: usize = 16;
/// The largest payload a frame may carry; a frame claiming more is invalid.
pub const FRAME_PAYLOAD_BYTES_MAX: usize = 1 << 30;

/// Where the checksummed bytes begin: the lsn field.
const CHECKSUMMED_FROM: usize = 8;

/// Appends one frame for `lsn` to `buf`: `encode_payload` appends the payload to `buf` (it
/// must only append), then the header is filled in.
///
/// Panics if the payload is over [`FRAME_PAYLOAD_BYTES_MAX`] (callers bound their records far
/// below it) or if `encode_payload` shrank the buffer.
pub fn encode_frame(buf: &mut Vec<u8>, lsn: u64, encode_payload: &mut dyn FnMut(&mut Vec<u8>)) {
    let start = buf.len();
    buf.extend_from_slice(&[0; FRAME_HEADER_BYTES]);
    encode_payload(buf);
    assert!(buf.len() >= start + FRAME_HEADER_BYTES, "the payload encoder must only append");
    let payload_len = buf.len() - start - FRAME_HEADER_BYTES;
    assert!(payload_len <= FRAME_PAYLOAD_BYTES_MAX, "frame payload of {payload_len} bytes is over the limit");
    buf[start + 8..start + 16].copy_from_slice(&lsn.to_le_bytes());
    let crc = crc32c::crc32c(&buf[start + CHECKSUMMED_FROM..]);
    write_length_and_crc(&mut buf[start..start + 8], payload_len, crc);
}

/// Appends one frame for `lsn` whose checksum is left zero for [`seal_frames`] to fill in:
/// a producer copies records into a shared buffer under a lock and leaves the checksums to a
/// thread that does not hold it.
pub fn append_unsealed_frame(buf: &mut Vec<u8>, lsn: u64, payload: &[u8]) {
    assert!(payload.len() <= FRAME_PAYLOAD_BYTES_MAX, "frame payload of {} bytes is over the limit", payload.len());
    let start = buf.len();
    buf.extend_from_slice(&[0; 8]);
    write_length_and_crc(&mut buf[start..], payload.len(), 0);
    buf.extend_from_slice(&lsn.to_le_bytes());
    buf.extend_from_slice(payload);
}

/// Fills in the checksum of every frame in `bytes`, which holds whole frames made by
/// [`append_unsealed_frame`] with lsns `first_lsn, first_lsn + 1, ...`; returns how many.
///
/// Panics if the bytes are not such frames: that is a bug in whoever produced them, and
/// sealing it would make garbage look valid.
pub fn seal_frames(bytes: &mut [u8], first_lsn: u64) -> u64 {
    let mut offset = 0;
    let mut count = 0;
    while offset < bytes.len() {
        assert!(bytes.len() - offset >= FRAME_HEADER_BYTES, "a frame header is cut short at offset {offset}");
        let payload_len = u32_at(bytes, offset) as usize;
        let end = offset + FRAME_HEADER_BYTES + payload_len;
        assert!(
            payload_len <= FRAME_PAYLOAD_BYTES_MAX && end <= bytes.len(),
            "frame at offset {offset} runs past the end"
        );
        assert_eq!(u64_at(bytes, offset + 8), first_lsn + count, "frame at offset {offset} has the wrong lsn");
        let crc = crc32c::crc32c(&bytes[offset + CHECKSUMMED_FROM..end]);
        bytes[offset + 4..offset + 8].copy_from_slice(&crc.to_le_bytes());
        offset = end;
        count += 1;
    }
    count
}

fn write_length_and_crc(header: &mut [u8], payload_len: usize, crc: u32) {
    // Cannot fail: callers checked payload_len <= FRAME_PAYLOAD_BYTES_MAX < u32::MAX.
    let len = u32::try_from(payload_len).expect("frame length fits u32");
    header[0..4].copy_from_slice(&len.to_le_bytes());
    header[4..8].copy_from_slice(&crc.to_le_bytes());
}

/// What [`read_frame`] found at an offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameRead<'a> {
    /// A frame that checks out; the next frame starts at `next`.
    Frame { lsn: u64, payload: &'a [u8], next: usize },
    /// The bytes end before the frame does (also when no byte is left at all).
    Incomplete,
    /// The frame is invalid: checksum mismatch or a length over the limit.
    Corrupt(&'static str),
}

/// Reads the frame starting at `offset` of `bytes`. Panics if `offset > bytes.len()`.
pub fn read_frame(bytes: &[u8], offset: usize) -> FrameRead<'_> {
    assert!(offset <= bytes.len(), "offset {offset} is past the {} bytes", bytes.len());
    let rest = &bytes[offset..];
    if rest.len() < FRAME_HEADER_BYTES {
        return FrameRead::Incomplete;
    }
    let payload_len = u32_at(rest, 0) as usize;
    if payload_len > FRAME_PAYLOAD_BYTES_MAX {
        return FrameRead::Corrupt("frame length over the limit");
    }
    let frame_len = FRAME_HEADER_BYTES + payload_len;
    if rest.len() < frame_len {
        return FrameRead::Incomplete;
    }
    if crc32c::crc32c(&rest[CHECKSUMMED_FROM..frame_len]) != u32_at(rest, 4) {
        return FrameRead::Corrupt("checksum mismatch");
    }
    let lsn = u64_at(rest, 8);
    FrameRead::Frame { lsn, payload: &rest[FRAME_HEADER_BYTES..frame_len], next: offset + frame_len }
}

/// The lsn field of a frame header at `offset`, unchecked: lets a scan skip offsets cheaply
/// before paying for a checksum.
pub(crate) fn peek_lsn(bytes: &[u8], offset: usize) -> Option<u64> {
    let header = bytes.get(offset..offset + FRAME_HEADER_BYTES)?;
    Some(u64_at(header, 8))
}

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    let mut word = [0; 4];
    word.copy_from_slice(&bytes[at..at + 4]);
    u32::from_le_bytes(word)
}

pub(crate) fn u64_at(bytes: &[u8], at: usize) -> u64 {
    let mut word = [0; 8];
    word.copy_from_slice(&bytes[at..at + 8]);
    u64::from_le_bytes(word)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(lsn: u64, payload: &[u8]) -> Vec<u8> {
        let mut buf = Vec::new();
        encode_frame(&mut buf, lsn, &mut |b| b.extend_from_slice(payload));
        buf
    }

    #[test]
    fn round_trip_of_consecutive_frames() {
        let mut buf = frame(7, b"hello");
        buf.extend(frame(8, b""));
        let FrameRead::Frame { lsn, payload, next } = read_frame(&buf, 0) else { panic!("first frame") };
        assert_eq!((lsn, payload, next), (7, &b"hello"[..], FRAME_HEADER_BYTES + 5));
        let FrameRead::Frame { lsn, payload, next } = read_frame(&buf, next) else { panic!("second frame") };
        assert_eq!((lsn, payload, next), (8, &b""[..], buf.len()));
        assert_eq!(read_frame(&buf, buf.len()), FrameRead::Incomplete);
    }

    #[test]
    fn sealed_frames_match_encoded_frames() {
        let payloads = [&b""[..], b"x", b"a longer payload with some bytes in it"];
        let (mut unsealed, mut encoded) = (Vec::new(), Vec::new());
        for (lsn, payload) in (42..).zip(payloads) {
            append_unsealed_frame(&mut unsealed, lsn, payload);
            encode_frame(&mut encoded, lsn, &mut |b| b.extend_from_slice(payload));
        }
        assert_ne!(unsealed, encoded);
        assert_eq!(seal_frames(&mut unsealed, 42), 3);
        assert_eq!(unsealed, encoded);
    }

    #[test]
    #[should_panic(expected = "wrong lsn")]
    fn sealing_refuses_a_gap_in_lsns() {
        let mut buf = Vec::new();
        append_unsealed_frame(&mut buf, 1, b"a");
        append_unsealed_frame(&mut buf, 3, b"b");
        seal_frames(&mut buf, 1);
    }

    #[test]
    fn every_cut_is_incomplete() {
        let buf = frame(1, b"some payload");
        for cut in 0..buf.len() {
            assert_eq!(read_frame(&buf[..cut], 0), FrameRead::Incomplete, "cut at {cut}");
        }
    }

    #[test]
    fn every_bit_flip_is_detected() {
        let buf = frame(3, b"payload bytes");
        for byte in 0..buf.len() {
            for bit in 0..8 {
                let mut damaged = buf.clone();
                damaged[byte] ^= 1 << bit;
                let read = read_frame(&damaged, 0);
                assert!(!matches!(read, FrameRead::Frame { .. }), "flip of bit {bit} in byte {byte}: {read:?}");
            }
        }
    }

    #[test]
    fn oversize_length_is_corrupt_even_when_bytes_run_out() {
        let mut buf = frame(1, b"abc");
        buf[0..4].copy_from_slice(&(FRAME_PAYLOAD_BYTES_MAX as u32 + 1).to_le_bytes());
        assert_eq!(read_frame(&buf, 0), FrameRead::Corrupt("frame length over the limit"));
    }

    #[test]
    #[should_panic(expected = "only append")]
    fn encoder_that_truncates_panics() {
        let mut buf = vec![0; 4];
        encode_frame(&mut buf, 1, &mut |b| b.clear());
    }
}
