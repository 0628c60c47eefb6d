//! The agent's token: the file is created when missing (32 random bytes from /dev/urandom as
//! 64 hex characters and a newline, mode 0600, its directory 0700 when it has to be made), then
//! read by the rules the collector reads it by (`nasprobe_proto::token::file`): the agent
//! refuses to start on a file that group or others can access (anyone who can read it can read
//! every sample), and on a symlink that leaves the file's directory.

use std::fs;
use std::io::Read;
use std::path::Path;

use nasprobe_proto::token::file::{self, TOKEN_RANDOM_BYTES};

/// Fills `buf` from /dev/urandom (not getrandom(2): Linux 3.10 lacks it).
pub(crate) fn random_bytes(buf: &mut [u8]) -> std::io::Result<()> {
    fs::File::open("/dev/urandom")?.read_exact(buf)
}

/// Loads the token at `path`, creating it when missing. The token is the file's content with
/// surrounding whitespace trimmed (the HMAC key is those bytes, so collectors read the file the
/// same way).
pub fn load_or_create(path: &Path) -> Result<Vec<u8>, String> {
    if file::is_missing(path).map_err(|e| e.to_string())? {
        let mut raw = [0u8; TOKEN_RANDOM_BYTES];
        random_bytes(&mut raw).map_err(|e| format!("reading /dev/urandom: {e}"))?;
        file::create(path, &raw).map_err(|e| e.to_string())?;
        log::info!(
            "created token file {} (mode 0600); give it to the collector",
            path.display()
        );
    }
    load(path)
}

/// Loads an existing token file by the shared rules.
pub fn load(path: &Path) -> Result<Vec<u8>, String> {
    file::read(path).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};

    fn tmpdir(name: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("nasprobe-token-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn creates_hex_token_with_private_modes() {
        let d = tmpdir("create");
        let path = d.join("sub/token");
        let t = load_or_create(&path).unwrap();
        assert_eq!(t.len(), 64);
        assert!(t.iter().all(|c| c.is_ascii_hexdigit()));
        assert_eq!(fs::metadata(&path).unwrap().mode() & 0o777, 0o600);
        assert_eq!(fs::metadata(d.join("sub")).unwrap().mode() & 0o777, 0o700);
        // Stable across loads.
        assert_eq!(load_or_create(&path).unwrap(), t);
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn refuses_group_readable_with_the_fix() {
        let d = tmpdir("perm");
        fs::create_dir_all(&d).unwrap();
        let path = d.join("token");
        fs::write(&path, "0123456789abcdef0123456789abcdef\n").unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o640)).unwrap();
        let e = load_or_create(&path).unwrap_err();
        assert!(e.contains(&format!("chmod 600 {}", path.display())), "{e}");
        fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(load(&path).unwrap(), b"0123456789abcdef0123456789abcdef");
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn refuses_a_symlink_out_of_its_directory_like_the_collector() {
        let d = tmpdir("link");
        let far = tmpdir("link-far");
        fs::create_dir_all(&d).unwrap();
        fs::create_dir_all(&far).unwrap();
        let real = far.join("token");
        fs::write(&real, "0123456789abcdef0123456789abcdef\n").unwrap();
        fs::set_permissions(&real, fs::Permissions::from_mode(0o600)).unwrap();
        std::os::unix::fs::symlink(&real, d.join("token")).unwrap();
        let e = load_or_create(&d.join("token")).unwrap_err();
        assert!(e.contains("outside its directory"), "{e}");
        std::os::unix::fs::symlink("token.2026", d.join("near")).unwrap();
        fs::copy(&real, d.join("token.2026")).unwrap();
        assert_eq!(
            load_or_create(&d.join("near")).unwrap(),
            b"0123456789abcdef0123456789abcdef"
        );
        fs::remove_dir_all(&d).unwrap();
        fs::remove_dir_all(&far).unwrap();
    }
}
