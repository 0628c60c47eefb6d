//! Arbitrary bytes into the frame decoder, under both caps. Decoding must never panic; a frame
//! that decodes must re-encode, the re-encoding must decode to the same message, and it must be
//! no longer than the input frame (postcard may accept overlong varints; it never emits them).
//! Sealed (protocol 2, after the handshake): the raw bytes never pass the MAC check; the same
//! frame sealed with the session's MAC decodes exactly as it does unsealed.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nasprobe_proto::frame::{
    FrameError, LEN_PREFIX, MAX_CLIENT_FRAME_LEN, MAX_FRAME_LEN, decode_frame, decode_sealed_frame,
    encode_frame, peek_len,
};
use nasprobe_proto::session::{Direction, FrameMac, MAC_LEN};

fn mac() -> FrameMac {
    FrameMac::new(b"fuzz-token", &[1; 32], &[2; 32], Direction::ToCollector)
}

fuzz_target!(|data: &[u8]| {
    for max in [MAX_FRAME_LEN, MAX_CLIENT_FRAME_LEN] {
        match decode_frame(data, max) {
            Ok(Some((msg, used))) => {
                assert!(used > LEN_PREFIX && used <= data.len() && used - LEN_PREFIX <= max);
                let mut buf = [0u8; LEN_PREFIX + MAX_FRAME_LEN];
                let n = encode_frame(&msg, &mut buf).expect("a decoded message re-encodes");
                assert!(
                    n <= used,
                    "re-encoding ({n} bytes) longer than the input ({used})"
                );
                let (back, used2) = decode_frame(&buf[..n], max)
                    .expect("the re-encoding decodes")
                    .expect("the re-encoding is a whole frame");
                assert_eq!(used2, n);
                assert_eq!(back, msg);
            }
            // Incomplete: the prefix or the announced body has not fully arrived.
            Ok(None) => match peek_len(data, max) {
                Ok(None) => assert!(data.len() < LEN_PREFIX),
                Ok(Some(len)) => assert!(data.len() < LEN_PREFIX + len),
                Err(e) => panic!("decode_frame waits but peek_len refuses: {e}"),
            },
            Err(FrameError::TooLong { len, max: m }) => assert!(len > m && m == max),
            Err(_) => {}
        }
        // Arbitrary bytes as a sealed frame: waiting or refused, never accepted.
        let mut rx = mac();
        match decode_sealed_frame(data, max, &mut rx) {
            Ok(Some(_)) => panic!("a frame with a made-up MAC was accepted"),
            Ok(None) | Err(_) => assert_eq!(rx.counter(), 0),
        }
        // The same frame sealed: decodes as the unsealed one does, the MAC's bytes on top.
        if let Ok(Some(len)) = peek_len(data, max)
            && data.len() >= LEN_PREFIX + len
        {
            let frame = &data[..LEN_PREFIX + len];
            let mut sealed = frame.to_vec();
            sealed.extend_from_slice(&mac().seal(frame));
            let plain = decode_frame(frame, max).map(|o| o.map(|(m, u)| (m, u + MAC_LEN)));
            assert_eq!(decode_sealed_frame(&sealed, max, &mut mac()), plain);
        }
    }
});
