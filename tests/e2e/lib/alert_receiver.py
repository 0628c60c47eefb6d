"""A webhook receiver for the alert tests: a real HTTP server on loopback that appends each
POST body as one line to OUT (JSON bodies compacted), answering 500 to the first FAIL_FIRST
requests, then 200; https with CERT and KEY (PEM files).

    python3 alert_receiver.py PORT OUT [FAIL_FIRST [CERT KEY]]
"""
import http.server
import json
import ssl
import sys

PORT, OUT = int(sys.argv[1]), sys.argv[2]
FAIL_FIRST = int(sys.argv[3]) if len(sys.argv) > 3 else 0
seen = {"n": 0}


class Hook(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        seen["n"] += 1
        with open(OUT + ".attempts", "a") as f:
            f.write("%d %s\n" % (seen["n"], self.path))
        if seen["n"] <= FAIL_FIRST:
            self.send_response(500)
            self.end_headers()
            self.wfile.write(b"down for maintenance")
            return
        try:
            line = json.dumps(json.loads(body), separators=(",", ":"), ensure_ascii=False)
        except ValueError:
            line = json.dumps({"raw": body.decode("utf-8", "replace"), "headers": dict(self.headers)})
        with open(OUT, "a") as f:
            f.write(line + "\n")
        self.send_response(200)
        self.end_headers()

    def log_message(self, *a):
        pass


server = http.server.HTTPServer(("127.0.0.1", PORT), Hook)
if len(sys.argv) > 5:
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(sys.argv[4], sys.argv[5])
    server.socket = tls.wrap_socket(server.socket, server_side=True)
server.serve_forever()
