//! Arbitrary bytes into the frame decoder, under both caps. Decoding must never panic; a frame
//! that decodes must re-encode, the re-encoding must decode to the same message, and it must be
//! no longer than the input frame (postcard may accept overlong varints; it never emits them).
#![no_main]

use libfuzzer_sys::fuzz_target;
use nasprobe_proto::frame::{
    FrameError, LEN_PREFIX, MAX_CLIENT_FRAME_LEN, MAX_FRAME_LEN, decode_frame, encode_frame,
    peek_len,
};

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
    }
});
