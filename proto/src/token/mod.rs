//! The rules of a token file, shared by the agent (which makes it) and the collector (which
//! reads it): the token is the file's content with surrounding ASCII whitespace trimmed, 16 to
//! 4096 printable ASCII characters without spaces (the agent writes 64 hex characters and a
//! newline). The HMAC key is those bytes, so both sides must read the file the same way.
//!
//! With the `std` feature, [`mod@file`] holds the rules of the file itself (create, read, which
//! files are refused), shared by agent and collector.

use core::fmt;

#[cfg(feature = "std")]
pub mod file;

/// Most bytes a token file may hold.
pub const MAX_TOKEN_FILE_BYTES: u64 = 4096;
/// Fewest bytes a token may have.
pub const MIN_TOKEN_BYTES: usize = 16;

/// Why a token file's content is not a token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TokenError {
    /// Larger than [`MAX_TOKEN_FILE_BYTES`].
    TooLarge(u64),
    /// Shorter than [`MIN_TOKEN_BYTES`] once trimmed.
    TooShort(usize),
    /// A byte that is not printable ASCII (or a space inside): a binary file, not a token.
    NotText {
        /// Offset of the byte in the file.
        at: usize,
        /// The byte found there.
        byte: u8,
    },
}

impl fmt::Display for TokenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TokenError::TooLarge(n) => {
                write!(
                    f,
                    "{n} bytes, more than a token file holds ({MAX_TOKEN_FILE_BYTES})"
                )
            }
            TokenError::TooShort(n) => write!(
                f,
                "the token is {n} bytes, shorter than {MIN_TOKEN_BYTES}; delete the file and the \
                 agent makes a new one"
            ),
            TokenError::NotText { at, byte } => write!(
                f,
                "byte {at} is {byte:#04x}: a token is printable ASCII (64 hex characters); is \
                 this the token file?"
            ),
        }
    }
}

#[cfg(feature = "std")]
impl std::error::Error for TokenError {}

/// Lower-case hex of a byte string, as a `Display` (no allocation): `format!("{}", Hex(&b))`.
pub struct Hex<'a>(pub &'a [u8]);

impl fmt::Display for Hex<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for b in self.0 {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

/// The token in a token file's `content` (see the module's rules).
pub fn token_from_file(content: &[u8]) -> Result<&[u8], TokenError> {
    if content.len() as u64 > MAX_TOKEN_FILE_BYTES {
        return Err(TokenError::TooLarge(content.len() as u64));
    }
    let t = content.trim_ascii();
    if t.len() < MIN_TOKEN_BYTES {
        return Err(TokenError::TooShort(t.len()));
    }
    if let Some(at) = t.iter().position(|b| !b.is_ascii_graphic()) {
        return Err(TokenError::NotText { at, byte: t[at] });
    }
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules() {
        let hex = b"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\n";
        assert_eq!(token_from_file(hex), Ok(&hex[..64]));
        assert_eq!(token_from_file(b"abcd\n"), Err(TokenError::TooShort(4)));
        assert!(matches!(
            token_from_file(b"0123456789abcdef\x00\xff0123"),
            Err(TokenError::NotText { at: 16, .. })
        ));
        assert!(matches!(
            token_from_file(b"root:$6$abc:19000:0:99999:7:::\nbin:*:19000::::::\n"),
            Err(TokenError::NotText { .. })
        ));
        assert_eq!(
            token_from_file(&[b'a'; 5000]),
            Err(TokenError::TooLarge(5000))
        );
    }
}
