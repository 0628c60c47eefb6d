# Certificates for the https e2e steps, made by openssl: a CA of the test's own and a server
# certificate it signs for localhost and 127.0.0.1.
#   tls_make DIR     writes DIR/ca.pem, DIR/server.pem, DIR/server.key (and DIR/other-ca.pem: a
#                    second CA that signed nothing here)
# Sourced (not run) after lib/base.sh; needs openssl.
# shellcheck shell=bash
tls_make() {
    local d=$1
    mkdir -p "$d"
    command -v openssl >/dev/null || e2e_skip "${E2E_NAME:-tls}" "openssl missing"
    local ca
    for ca in ca other-ca; do
        openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
            -subj "/CN=nasprobe e2e $ca" -keyout "$d/$ca.key" -out "$d/$ca.pem" \
            -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign \
            2>>"$d/openssl.log" || fail "openssl: the $ca: $(cat "$d/openssl.log")"
    done
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=localhost" \
        -keyout "$d/server.key" -out "$d/server.csr" 2>>"$d/openssl.log" ||
        fail "openssl: the request: $(cat "$d/openssl.log")"
    printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' >"$d/ext"
    openssl x509 -req -in "$d/server.csr" -CA "$d/ca.pem" -CAkey "$d/ca.key" -CAcreateserial \
        -days 2 -extfile "$d/ext" -out "$d/server.pem" 2>>"$d/openssl.log" ||
        fail "openssl: signing: $(cat "$d/openssl.log")"
}
