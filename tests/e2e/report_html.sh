#!/usr/bin/env bash
# End-to-end test of the HTML report: record the synology-replication scenario through real
# programs (scenario trees, two nasprobe-agents, nasprobe record; tests/e2e/verdict_lib.sh), render
# it with `nasprobe report --html`, open it in headless Chromium (Debian's `chromium`, no network:
# background networking, sync, component updates and QUIC are off), take screenshots in light and
# dark mode and check they are not blank, dump the DOM and check it holds one chart per resource
# per host and the verdict text. Also renders seven days of synthetic data (the analysis crate's
# html_demo example: a week cannot be recorded in a test) and checks the file stays small and
# every event is still listed.
#
#   tests/e2e/report_html.sh                      run the checks
#   NASPROBE_SAVE_SCREENSHOT=1 tests/e2e/report_html.sh
#                                                 also write docs/img/report.png (< 300 KB)
#   NASPROBE_BIN_DIR=DIR ...                      nasprobe, nasprobe-agent, nasprobe-scenario
#                                                 from DIR, no build
#   NASPROBE_RECORD=60s ...                       how long to record the scenario (default 60s)
#   NASPROBE_KEEP=1 ...                           keep the temporary folder (printed)
set -euo pipefail
E2E_NAME=report_html
# shellcheck source=tests/e2e/lib/base.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/base.sh"

TMP="$(mktemp -d /tmp/nasprobe-html.XXXXXX)"
cleanup() {
    [[ -d $TMP/scenario ]] && vr_stop "$TMP/scenario"
    if [[ -n ${NASPROBE_KEEP:-} ]]; then
        say "kept $TMP"
    else
        rm -rf "$TMP"
    fi
}
trap cleanup EXIT

# --- what the report must show (the demo scenario: the field's first case) -----------------
EXPECT_HOSTS="src dst"
EXPECT_VERDICT="The wall is on dst: one thread of synoreplicad"
RESOURCES="throughput cpu disk memory bottleneck"

# --- render a report to $1 ($2 = --7d for seven days of data) ------------------------------
# Ten minutes -> a real recording of the field's first case through the collector; --7d -> the
# synthetic week of the analysis crate's example.
render_report() {
    if [[ ${2:-} == --7d ]]; then
        cargo run -q -p nasprobe-analysis --example html_demo -- "$@"
        return
    fi
    local dir="$TMP/scenario"
    if [[ ! -f $dir/nasprobe.db ]]; then
        if [[ -z ${NASPROBE_BIN_DIR:-} ]]; then
            cargo build -q -p nasprobe -p nasprobe-agent -p nasprobe-testkit
        fi
        local bin="${NASPROBE_BIN_DIR:-${CARGO_TARGET_DIR:-$REPO/target}/debug}"
        NP="$bin/nasprobe" AGENT="$bin/nasprobe-agent" SCEN="$bin/nasprobe-scenario"
        say "recording synology-replication for ${NASPROBE_RECORD:-60s}"
        # Agents at 1 s (the default on a NAS: the 100 ms tree steps are 10% of an interval, not
        # 50%); btrfs send restarts every 12 s so that one minute shows several of them.
        VR_INTERVAL=1000 vr_record synology-replication "$dir" "${NASPROBE_RECORD:-60s}" \
            --restart-every 12 || fail "recording the scenario: $(cat "$dir/result")"
    fi
    "$NP" --db "$dir/nasprobe.db" report --html "$1" >"$TMP/report.txt"
}
# shellcheck source=tests/e2e/verdict_lib.sh
source "$REPO/tests/e2e/verdict_lib.sh"

# --- chromium ------------------------------------------------------------------------------
if ! command -v chromium >/dev/null; then
    say "installing chromium (Debian package)"
    [[ $(id -u) == 0 ]] || fail "chromium is missing and installing it needs root"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/dev/null ||
        { apt-get update -q >/dev/null || true; DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/dev/null; }
fi
command -v chromium >/dev/null || fail "chromium not installed"
command -v python3 >/dev/null || fail "python3 missing"

# Headless, no sandbox (root), and nothing that talks to the network on its own.
chrome() {
    local profile
    profile="$(mktemp -d "$TMP/profile.XXXXXX")"
    timeout 120 chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
        --disable-background-networking --disable-component-update --disable-sync \
        --disable-default-apps --disable-extensions --no-default-browser-check \
        --hide-scrollbars --user-data-dir="$profile" "$@" 2>>"$TMP/chromium.log"
}

cat >"$TMP/check.py" <<'PY'
"""Checks on a screenshot (PNG, decoded with zlib alone) and on a dumped DOM."""
import sys, zlib, struct
from html.parser import HTMLParser


def png_pixels(path):
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, w = 8, [], None
    while pos < len(data):
        (n,) = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + n]
        pos += 12 + n
        if kind == b"IHDR":
            w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and ctype in (2, 6), f"unexpected PNG format {depth}/{ctype}"
            bpp = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat.append(body)
    raw = zlib.decompress(b"".join(idat))
    stride = w * bpp
    prev = bytearray(stride)
    rows = []
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        if f == 1:
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 255
        elif f == 2:
            line = bytearray((a + b) & 255 for a, b in zip(line, prev))
        elif f == 3:
            for i in range(stride):
                left = line[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + ((left + prev[i]) >> 1)) & 255
        elif f == 4:
            for i in range(stride):
                a = line[i - bpp] if i >= bpp else 0
                b = prev[i]
                c = prev[i - bpp] if i >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pr = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[i] = (line[i] + pr) & 255
        rows.append(bytes(line))
        prev = line
    return w, h, bpp, rows


def check_png(path, want_dark):
    w, h, bpp, rows = png_pixels(path)
    counts = {}
    for y in range(0, h, 2):
        r = rows[y]
        for x in range(0, w * bpp, 2 * bpp):
            px = r[x:x + 3]
            counts[px] = counts.get(px, 0) + 1
    total = sum(counts.values())
    bg, n_bg = max(counts.items(), key=lambda kv: kv[1])
    other = 1 - n_bg / total
    luma = (bg[0] * 299 + bg[1] * 587 + bg[2] * 114) / 1000
    print(f"{path}: {w}x{h}, {len(counts)} colours, {other:.1%} not background, background luma {luma:.0f}")
    assert len(counts) >= 50, "too few colours: blank page?"
    assert other >= 0.05, "almost everything is background: blank page?"
    if want_dark is not None:
        assert (luma < 80) == want_dark, f"background luma {luma:.0f}: wrong colour scheme"


class Dom(HTMLParser):
    def __init__(self):
        super().__init__()
        self.charts, self.verdict, self.depth, self.events = [], [], None, 0
        self.stack = 0

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "svg" and "chart" in (a.get("class") or "").split():
            self.charts.append((a.get("data-host"), a.get("data-resource")))
        if tag == "tr" and (a.get("class") or "").startswith("ev-"):
            self.events += 1
        if a.get("id") == "verdict":
            self.depth = 0
        if self.depth is not None and tag not in ("meta", "br", "img", "input", "hr"):
            self.depth += 1

    def handle_endtag(self, tag):
        if self.depth is not None:
            self.depth -= 1
            if self.depth == 0:
                self.depth = None

    def handle_data(self, d):
        if self.depth is not None:
            self.verdict.append(d)


def check_dom(path, hosts, resources, verdict, min_events):
    d = Dom()
    d.feed(open(path, encoding="utf-8").read())
    for h in hosts:
        for r in resources:
            n = d.charts.count((h, r))
            assert n == 1, f"{n} charts for {h}/{r}: {d.charts}"
    assert len(d.charts) == len(hosts) * len(resources), d.charts
    text = " ".join("".join(d.verdict).split())
    assert verdict in text, f"verdict text missing {verdict!r}: {text[:300]!r}"
    assert d.events >= min_events, f"{d.events} events listed, want >= {min_events}"
    print(f"{path}: {len(d.charts)} charts, {d.events} events, verdict: {text[:90]}...")


if __name__ == "__main__":
    if sys.argv[1] == "png":
        check_png(sys.argv[2], {"light": False, "dark": True, "any": None}[sys.argv[3]])
    else:
        check_dom(sys.argv[2], sys.argv[3].split(), sys.argv[4].split(), sys.argv[5], int(sys.argv[6]))
PY

check_page() { # name html min_events
    local name=$1 html=$2 min_events=$3
    grep -qE 'https?://|<link |src=' "$html" && fail "$name: the page refers to something outside itself"
    chrome --screenshot="$TMP/$name.png" --window-size=1400,1800 "file://$html" >/dev/null ||
        fail "$name: chromium screenshot failed (see $TMP/chromium.log)"
    python3 "$TMP/check.py" png "$TMP/$name.png" light || fail "$name: light screenshot"
    chrome --force-dark-mode --blink-settings=preferredColorScheme=0 \
        --screenshot="$TMP/$name-dark.png" --window-size=1400,1800 "file://$html" >/dev/null ||
        fail "$name: chromium dark screenshot failed"
    python3 "$TMP/check.py" png "$TMP/$name-dark.png" dark || fail "$name: dark screenshot"
    : >"$TMP/chromium.log"
    chrome --enable-logging=stderr --v=0 --dump-dom "file://$html" >"$TMP/$name.dom.html" ||
        fail "$name: --dump-dom failed"
    if grep -E 'Uncaught|CONSOLE.*(Error|error)' "$TMP/chromium.log"; then
        fail "$name: script errors in the page"
    fi
    python3 "$TMP/check.py" dom "$TMP/$name.dom.html" "$EXPECT_HOSTS" "$RESOURCES" \
        "$EXPECT_VERDICT" "$min_events" || fail "$name: DOM"
    # The cursor: a synthetic pointer move over the first chart puts a cursor on every time
    # chart and the time in the corner.
    sed 's#</body>#<script>var s=document.querySelector("svg.chart[data-t0]"),r=s.getBoundingClientRect();s.dispatchEvent(new MouseEvent("mousemove",{clientX:r.left+r.width/2,clientY:r.top+r.height/2}));</script></body>#' \
        "$html" >"$TMP/$name.hover.html"
    chrome --window-size=1400,1800 --dump-dom "file://$TMP/$name.hover.html" >"$TMP/$name.hover.dom.html" ||
        fail "$name: --dump-dom (hover) failed"
    local timed cursors
    timed=$(grep -o '<svg class="chart"[^>]*data-t0=' "$TMP/$name.hover.dom.html" | wc -l)
    cursors=$(grep -o '<line class="cursor"[^>]*visibility="visible"' "$TMP/$name.hover.dom.html" | wc -l)
    ((timed > 0 && cursors == timed)) || fail "$name: hover cursor on $cursors of $timed time charts"
    grep -q '<div id="cursor-time">20[0-9-]* [0-9:]* UTC</div>' "$TMP/$name.hover.dom.html" ||
        fail "$name: hover shows no time"
    say "$name: hover cursor on all $timed time charts"
}

say "rendering the reports"
render_report "$TMP/report.html" || fail "render (10 minutes)"
render_report "$TMP/report-7d.html" --7d || fail "render (7 days)"
size=$(stat -c %s "$TMP/report-7d.html")
((size < 2000000)) || fail "7-day report is $size bytes"
say "10 min: $(stat -c %s "$TMP/report.html") bytes, 7 days: $size bytes"

check_page report "$TMP/report.html" 8
check_page report-7d "$TMP/report-7d.html" 150

if [[ -n ${NASPROBE_SAVE_SCREENSHOT:-} ]]; then
    mkdir -p docs/img
    out=docs/img/report.png
    if python3 -c 'import PIL' 2>/dev/null; then
        python3 - "$TMP/report.png" "$out" <<'PY'
import sys
from PIL import Image
im = Image.open(sys.argv[1]).convert("RGB")
im.quantize(colors=256, method=Image.Quantize.FASTOCTREE, dither=Image.Dither.NONE).save(sys.argv[2], optimize=True)
PY
    elif command -v pngquant >/dev/null; then
        pngquant --force --quality 60-90 --output "$out" "$TMP/report.png"
    else
        cp "$TMP/report.png" "$out"
    fi
    say "wrote $out ($(stat -c %s "$out") bytes)"
fi
say "PASS"
