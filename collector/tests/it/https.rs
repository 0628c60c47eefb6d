//! The collector's https (`nasprobe::http`) against TLS receivers on loopback with certificates
//! of a CA made for the test: a push goes through when `--ca-file` names that CA; a receiver the
//! trust does not vouch for (an unknown CA, another host's name, no TLS at all) is refused with
//! an error that says what the certificate was checked against, and nothing is sent to it.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc;
use std::time::Duration;

use nasprobe::export::pusher::{PushError, Pusher, VmTarget};
use nasprobe::http::Trust;
use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

/// A CA of the test's own, written as PEM into `dir/ca.pem`.
struct TestCa {
    issuer: CertifiedIssuer<'static, KeyPair>,
    pem_path: PathBuf,
}

impl TestCa {
    fn new(dir: &Path, name: &str) -> TestCa {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, name);
        let issuer = CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap();
        let pem_path = dir.join(format!("{name}.pem"));
        std::fs::write(&pem_path, issuer.pem()).unwrap();
        TestCa { issuer, pem_path }
    }

    /// A server certificate for `names`, and its key.
    fn server_cert(&self, names: &[&str]) -> (CertificateDer<'static>, PrivateKeyDer<'static>) {
        let names: Vec<String> = names.iter().map(|s| s.to_string()).collect();
        let key = KeyPair::generate().unwrap();
        let cert = CertificateParams::new(names)
            .unwrap()
            .signed_by(&key, &self.issuer)
            .unwrap();
        let key = PrivatePkcs8KeyDer::from(key.serialize_der()).into();
        (cert.der().clone(), key)
    }
}

/// One request a receiver got: (path, body).
type Got = (String, Vec<u8>);

/// The answer of a receiver that takes what it is sent.
const NO_CONTENT: &str =
    "HTTP/1.1 204 No Content\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";

/// Reads one HTTP/1.1 request (headers, then Content-Length bytes) and writes `answer`.
fn serve_one(stream: &mut (impl Read + Write), answer: &str) -> std::io::Result<Got> {
    let mut r = BufReader::new(&mut *stream);
    let (mut line, mut path, mut len) = (String::new(), String::new(), 0usize);
    r.read_line(&mut line)?;
    if let Some(p) = line.split_whitespace().nth(1) {
        path = p.to_string();
    }
    loop {
        line.clear();
        if r.read_line(&mut line)? == 0 || line == "\r\n" {
            break;
        }
        if let Some((k, v)) = line.split_once(':')
            && k.eq_ignore_ascii_case("content-length")
        {
            len = v.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0; len];
    r.read_exact(&mut body)?;
    stream.write_all(answer.as_bytes())?;
    stream.flush()?;
    Ok((path, body))
}

/// A receiver on loopback answering 204: TLS with `cert` (or plain HTTP without), every request
/// it read whole sent on the channel. Runs until the test binary ends.
fn receiver(
    cert: Option<(CertificateDer<'static>, PrivateKeyDer<'static>)>,
) -> (SocketAddr, mpsc::Receiver<Got>) {
    receiver_answering(cert, NO_CONTENT)
}

/// [`receiver`] with another answer.
fn receiver_answering(
    cert: Option<(CertificateDer<'static>, PrivateKeyDer<'static>)>,
    answer: &'static str,
) -> (SocketAddr, mpsc::Receiver<Got>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let tls = cert.map(|(c, k)| {
        Arc::new(
            rustls::ServerConfig::builder()
                .with_no_client_auth()
                .with_single_cert(vec![c], k)
                .unwrap(),
        )
    });
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for tcp in listener.incoming() {
            let Ok(tcp) = tcp else { continue };
            tcp.set_read_timeout(Some(Duration::from_secs(10))).ok();
            let got = match &tls {
                Some(cfg) => {
                    let conn = rustls::ServerConnection::new(cfg.clone()).unwrap();
                    serve_one(&mut rustls::StreamOwned::new(conn, tcp), answer)
                }
                None => serve_one(&mut { tcp }, answer),
            };
            if let Ok(g) = got {
                let _ = tx.send(g);
            }
        }
    });
    (addr, rx)
}

fn pusher(url: &str, trust: &Trust) -> Pusher {
    Pusher::new(VmTarget::parse(url).unwrap(), Duration::from_secs(10)).with_trust(trust)
}

#[test]
fn a_push_over_https_goes_through_when_the_ca_file_vouches_for_the_receiver() {
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new(dir.path(), "nasprobe-test-ca");
    let (addr, got) = receiver(Some(ca.server_cert(&["localhost"])));
    let trust = Trust::from_ca_file(&ca.pem_path).unwrap();
    let p = pusher(&format!("https://localhost:{}", addr.port()), &trust);
    assert_eq!(p.target.base, format!("https://localhost:{}", addr.port()));
    p.import(b"nasprobe_up{host=\"nas\"} 1\n").unwrap();
    let (path, body) = got.recv_timeout(Duration::from_secs(5)).unwrap();
    assert_eq!(path, "/api/v1/import/prometheus");
    assert_eq!(body, b"nasprobe_up{host=\"nas\"} 1\n");
}

#[test]
fn a_receiver_of_an_unknown_ca_is_refused_naming_the_built_in_roots() {
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new(dir.path(), "private-ca");
    let (addr, got) = receiver(Some(ca.server_cert(&["localhost", "127.0.0.1"])));
    let p = pusher(
        &format!("https://localhost:{}", addr.port()),
        &Trust::default(),
    );
    let e = p.import(b"x 1\n").unwrap_err();
    let msg = e.to_string();
    assert!(matches!(e, PushError::Certificate(_)), "{e:?}");
    assert!(
        msg.contains("invalid peer certificate")
            && msg.contains("UnknownIssuer")
            && msg.contains("Mozilla roots")
            && msg.contains("--ca-file"),
        "{msg}"
    );
    assert!(got.recv_timeout(Duration::from_millis(300)).is_err());
}

#[test]
fn a_certificate_for_another_name_or_of_another_ca_is_refused_naming_the_ca_file() {
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new(dir.path(), "site-ca");
    let other = TestCa::new(dir.path(), "other-ca");
    let (addr, got) = receiver(Some(ca.server_cert(&["nas.example"])));
    let trust = Trust::from_ca_file(&ca.pem_path).unwrap();
    let e = pusher(&format!("https://localhost:{}", addr.port()), &trust)
        .import(b"x 1\n")
        .unwrap_err();
    let msg = e.to_string();
    assert!(matches!(e, PushError::Certificate(_)), "{e:?}");
    assert!(
        msg.contains("not valid for name") && msg.contains(&ca.pem_path.display().to_string()),
        "{msg}"
    );
    let (addr2, got2) = receiver(Some(other.server_cert(&["localhost"])));
    let e = pusher(&format!("https://localhost:{}", addr2.port()), &trust)
        .import(b"x 1\n")
        .unwrap_err();
    assert!(
        matches!(e, PushError::Certificate(ref m) if m.contains("UnknownIssuer")),
        "{e:?}"
    );
    assert!(got.recv_timeout(Duration::from_millis(300)).is_err());
    assert!(got2.recv_timeout(Duration::from_millis(100)).is_err());
}

#[test]
fn https_to_a_plain_http_receiver_fails_without_sending_and_http_still_works() {
    let (addr, got) = receiver(None);
    let e = pusher(
        &format!("https://127.0.0.1:{}", addr.port()),
        &Trust::default(),
    )
    .import(b"x 1\n")
    .unwrap_err();
    assert!(matches!(e, PushError::Http { .. }), "{e:?}");
    assert!(got.recv_timeout(Duration::from_millis(300)).is_err());
    pusher(&format!("127.0.0.1:{}", addr.port()), &Trust::default())
        .import(b"x 1\n")
        .unwrap();
    assert_eq!(
        got.recv_timeout(Duration::from_secs(5)).unwrap().1,
        b"x 1\n"
    );
}

#[test]
fn remote_write_urls_keep_https_and_other_schemes_are_refused() {
    let t = VmTarget::remote_write("https://mimir.example/api/v1/push").unwrap();
    assert_eq!(t.base, "https://mimir.example/api/v1/push");
    let t = VmTarget::remote_write("https://prom.example:9090").unwrap();
    assert_eq!(t.base, "https://prom.example:9090/api/v1/write");
    assert_eq!(
        VmTarget::parse("https://vm.example/").unwrap().base,
        "https://vm.example"
    );
    for bad in ["ftp://x/api", "https://", "https:///api/v1/write"] {
        assert!(VmTarget::remote_write(bad).is_err(), "{bad}");
    }
}

#[test]
fn a_redirect_is_not_followed_but_said_with_where_it_points() {
    // An http URL of a receiver that moved to https: following the 301 would turn the POST
    // into a GET without its batch.
    let moved = "HTTP/1.1 301 Moved Permanently\r\nLocation: https://rw.example/api/v1/write\r\n\
                 Content-Length: 0\r\nConnection: close\r\n\r\n";
    let (addr, got) = receiver_answering(None, moved);
    let e = pusher(&format!("127.0.0.1:{}", addr.port()), &Trust::default())
        .import(b"x 1\n")
        .unwrap_err();
    let msg = e.to_string();
    assert!(matches!(e, PushError::Status { status: 301, .. }), "{e:?}");
    assert!(
        msg.contains("redirects to https://rw.example/api/v1/write")
            && msg.contains("give that URL"),
        "{msg}"
    );
    assert_eq!(
        got.recv_timeout(Duration::from_secs(5)).unwrap().1,
        b"x 1\n"
    );
    assert!(
        got.recv_timeout(Duration::from_millis(300)).is_err(),
        "followed the redirect"
    );
    assert!(
        !nasprobe::export::pusher::refused_for_good(&e),
        "a redirect must not drop the batch"
    );
}
