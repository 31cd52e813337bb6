//! Gzip of profile.proto bytes, as `go tool pprof` reads them.

use std::io::Write;

use flate2::Compression;
use flate2::write::GzEncoder;

/// `raw` gzip-compressed at the fastest level, for profiles stored as they arrive (many a
/// second in `agentprof receive`): each thread keeps one deflate state and resets it, so
/// no call allocates or clears the encoder's tables again. Member header, raw deflate,
/// then CRC-32 and length (RFC 1952).
pub fn gzip_fast(raw: &[u8]) -> Vec<u8> {
    use flate2::{Compress, FlushCompress, Status};
    thread_local! {
        static DEFLATE: std::cell::RefCell<Compress> =
            std::cell::RefCell::new(Compress::new(Compression::fast(), false));
    }
    // ID1 ID2, deflate, no flags, no mtime, XFL 4 (fastest), OS unknown.
    let mut out = Vec::with_capacity(raw.len() / 3 + 64);
    out.extend_from_slice(&[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 4, 255]);
    let ok = DEFLATE.with(|d| {
        let mut d = d.borrow_mut();
        d.reset();
        loop {
            let read = d.total_in() as usize;
            if out.capacity() - out.len() < 4096 {
                out.reserve(out.capacity().max(8192));
            }
            match d.compress_vec(&raw[read.min(raw.len())..], &mut out, FlushCompress::Finish) {
                Ok(Status::StreamEnd) => return true,
                Ok(_) => {}
                Err(_) => return false,
            }
        }
    });
    if !ok {
        // Not reached with a sound state; the encoder that allocates is the fallback.
        let mut gz = GzEncoder::new(Vec::new(), Compression::fast());
        let _ = gz.write_all(raw);
        return gz.finish().unwrap_or_default();
    }
    let mut crc = flate2::Crc::new();
    crc.update(raw);
    out.extend_from_slice(&crc.sum().to_le_bytes());
    out.extend_from_slice(&(raw.len() as u32).to_le_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gzip_fast_is_gzip_each_time() {
        use std::io::Read;
        let texts: Vec<Vec<u8>> = vec![
            (0..200_000u32)
                .flat_map(|i| (i % 251).to_le_bytes())
                .collect(),
            Vec::new(),
            b"short".to_vec(),
            (0..50_000u32)
                .flat_map(|i| i.wrapping_mul(2654435761).to_le_bytes())
                .collect(),
        ];
        for t in &texts {
            let gz = gzip_fast(t);
            let mut back = Vec::new();
            flate2::read::GzDecoder::new(&gz[..])
                .read_to_end(&mut back)
                .expect("gunzip");
            assert_eq!(&back, t);
        }
    }
}
