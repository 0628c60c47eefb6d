//! Compressed chunks of consecutive samples of one agent instance: the store's long-term form.
//!
//! A chunk holds the samples of one instance whose times fall in one [`SPAN_MS`] window (at
//! most [`MAX_ROWS`] of them), in sequence order. Encoding: one format byte, then a zstd frame
//! (level [`LEVEL`], with its content checksum) of `count`, then per sample the seq delta, the
//! zigzag time delta and the body length (LEB128 varints), then the postcard body as received.
//! Decoding checks everything (checksum, strictly growing seqs, lengths, no trailing bytes):
//! a damaged chunk is a typed error, never a wrong sample.

/// Time span of a chunk: samples stay raw rows (the open chunk) until a sample of a later
/// window arrives, then the closed windows are folded into chunks.
pub(crate) const SPAN_MS: u64 = 15 * 60_000;
/// At most this many samples per chunk (a 10 Hz agent fills a window with 9000).
pub(crate) const MAX_ROWS: usize = 4096;
/// zstd level: 3 (the default) measured best for time per byte saved, see BENCHMARKS.md.
pub(crate) const LEVEL: i32 = 3;
/// Largest decoded chunk accepted (a corrupt frame header cannot make us allocate more).
const MAX_DECODED: usize = 64 << 20;
const FORMAT: u8 = 1;

/// One stored sample: seq, agent time, postcard body as received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Row {
    pub seq: u64,
    pub time_ms: u64,
    pub body: Vec<u8>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ChunkError {
    #[error("chunk format {0} unknown")]
    Format(u8),
    #[error("chunk does not decompress: {0}")]
    Zstd(String),
    #[error("chunk payload malformed at byte {0}")]
    Malformed(usize),
}

/// The window a time falls in (chunks never straddle two).
pub(crate) fn window(time_ms: u64) -> u64 {
    time_ms / SPAN_MS
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn get_varint(b: &[u8], pos: &mut usize) -> Result<u64, ChunkError> {
    let mut v: u64 = 0;
    for shift in (0..64).step_by(7) {
        let byte = *b.get(*pos).ok_or(ChunkError::Malformed(*pos))?;
        *pos += 1;
        v |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok(v);
        }
    }
    Err(ChunkError::Malformed(*pos))
}

/// Encodes `rows` (seqs strictly growing) into one chunk.
pub(crate) fn encode(rows: &[Row]) -> Vec<u8> {
    let mut raw = Vec::with_capacity(rows.iter().map(|r| r.body.len() + 8).sum::<usize>() + 8);
    put_varint(&mut raw, rows.len() as u64);
    let (mut seq, mut time) = (0u64, 0i64);
    for r in rows {
        debug_assert!(r.seq > seq || seq == 0);
        put_varint(&mut raw, r.seq - seq);
        let dt = r.time_ms as i64 - time;
        put_varint(&mut raw, ((dt << 1) ^ (dt >> 63)) as u64);
        put_varint(&mut raw, r.body.len() as u64);
        raw.extend_from_slice(&r.body);
        seq = r.seq;
        time = r.time_ms as i64;
    }
    let mut c = zstd::bulk::Compressor::new(LEVEL).expect("zstd level 3 is valid");
    c.include_checksum(true).expect("zstd checksum flag");
    let z = c
        .compress(&raw)
        .expect("zstd compresses into a growing buffer");
    let mut out = Vec::with_capacity(z.len() + 1);
    out.push(FORMAT);
    out.extend_from_slice(&z);
    out
}

/// Decodes a chunk written by [`encode`].
pub(crate) fn decode(data: &[u8]) -> Result<Vec<Row>, ChunkError> {
    let (&format, z) = data.split_first().ok_or(ChunkError::Malformed(0))?;
    if format != FORMAT {
        return Err(ChunkError::Format(format));
    }
    let raw =
        zstd::bulk::decompress(z, MAX_DECODED).map_err(|e| ChunkError::Zstd(e.to_string()))?;
    let mut pos = 0;
    let n = get_varint(&raw, &mut pos)?;
    if n > MAX_ROWS as u64 * 4 {
        return Err(ChunkError::Malformed(0));
    }
    let mut rows = Vec::with_capacity(n as usize);
    let (mut seq, mut time) = (0u64, 0i64);
    for _ in 0..n {
        let at = pos;
        let ds = get_varint(&raw, &mut pos)?;
        let zz = get_varint(&raw, &mut pos)?;
        let len = get_varint(&raw, &mut pos)? as usize;
        let dt = ((zz >> 1) as i64) ^ -((zz & 1) as i64);
        seq = seq.checked_add(ds).ok_or(ChunkError::Malformed(at))?;
        time = time.checked_add(dt).ok_or(ChunkError::Malformed(at))?;
        let end = pos.checked_add(len).ok_or(ChunkError::Malformed(at))?;
        if ds == 0 || time < 0 || end > raw.len() {
            return Err(ChunkError::Malformed(at));
        }
        rows.push(Row {
            seq,
            time_ms: time as u64,
            body: raw[pos..end].to_vec(),
        });
        pos = end;
    }
    if pos != raw.len() {
        return Err(ChunkError::Malformed(pos));
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(seqs: &[u64]) -> Vec<Row> {
        seqs.iter()
            .map(|&s| Row {
                seq: s,
                time_ms: 1_700_000_000_000 + s * 1000 - (s % 3) * 7,
                body: (0..(s % 50) as u8).collect(),
            })
            .collect()
    }

    #[test]
    fn round_trips_with_holes_and_clock_steps() {
        let mut r = rows(&[1, 2, 3, 7, 8, 1000, 1001, 1 << 40]);
        r[4].time_ms -= 60_000; // a clock step back
        assert_eq!(decode(&encode(&r)).unwrap(), r);
        assert_eq!(decode(&encode(&[])).unwrap(), vec![]);
    }

    #[test]
    fn every_damage_is_an_error_never_a_wrong_row() {
        let r = rows(&(1..300).collect::<Vec<_>>());
        let enc = encode(&r);
        for cut in 0..enc.len() {
            assert!(decode(&enc[..cut]).is_err(), "truncated at {cut}");
        }
        for i in (0..enc.len()).step_by(7) {
            let mut bad = enc.clone();
            bad[i] ^= 0x5a;
            if let Ok(got) = decode(&bad) {
                assert_eq!(got, r, "flipped byte {i} decoded to other rows");
            }
        }
        let mut extra = enc.clone();
        extra.push(0);
        assert!(decode(&extra).is_err());
    }
}
