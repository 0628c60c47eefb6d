# Records real rtnetlink traffic-control dumps (RTM_GETQDISC, RTM_GETTCLASS, RTM_GETTFILTER) of
# one veth end in a network namespace this script creates, for the parser tests of
# agent/src/parse/tc.rs:
#   python3 capture_tc.py OUTDIR    (as root) writes tc-<case>-<qdisc|class|filter>-<kernel>.bin
# Cases: none (the veth's default noqueue), tbf (rate 200mbit), htb (1:10 rate 200mbit,
# 1:20 rate 40gbit so that TCA_HTB_RATE64 is present, default 20), u32 (the htb with the u32
# filters of U32_FILTERS on its root; only its filter dump is written), ingress (no root shaper).
# Only the messages of the veth (its ifindex) are kept, the NLMSG_DONE of each dump too.
import os, socket, struct, subprocess, sys
out = sys.argv[1]
rel = os.uname().release.split("-")[0]
NS = "nptc-capture"
# Port keys in both of tc's forms (IP-header offset; nexthdr-relative `tcp dst`), sport and
# dport merged into one key, an IPv6 port, and a key that is not a port.
U32_FILTERS = [
    "protocol ip prio 1 u32 match ip dport 7462 0xffff flowid 1:10",
    "protocol ip prio 2 u32 match ip sport 5201 0xffff flowid 1:10",
    "protocol ip prio 3 u32 match ip protocol 6 0xff match tcp dst 445 0xffff flowid 1:20",
    "protocol ip prio 4 u32 match ip sport 22 0xffff match ip dport 2049 0xffff flowid 1:20",
    "protocol ip prio 5 u32 match ip dst 10.9.9.9/32 flowid 1:20",
    "protocol ipv6 prio 6 u32 match ip6 dport 3260 0xffff flowid 1:10",
]

def sh(*a):
    subprocess.run(["ip", "netns", "exec", NS] + list(a), check=True)

def dump(kind, ifindex):
    r = subprocess.run(["ip", "netns", "exec", NS, sys.executable, __file__, "--dump", str(kind),
                        str(ifindex)], check=True, capture_output=True)
    return r.stdout

def dump_here(kind, ifindex):
    nl = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)
    # RTM_GETTCLASS dumps only the classes of tcm_ifindex (0 gives nothing); RTM_GETTFILTER
    # with tcm_parent 0 the filters of its root qdisc.
    req = struct.pack("=BxxxiIII", 0, ifindex, 0, 0, 0)
    nl.send(struct.pack("=IHHII", 16 + len(req), kind, 0x301, 1, 0) + req)
    keep = b""
    while True:
        d = nl.recv(65536); i = 0
        while i < len(d):
            ln, ty = struct.unpack_from("=IH", d, i)
            m = d[i:i + ln]
            if ty == 3:
                return keep + m
            if struct.unpack_from("=i", m, 20)[0] == ifindex:
                keep += m + b"\0" * (((ln + 3) & ~3) - ln)
            i += (ln + 3) & ~3

if sys.argv[1] == "--dump":
    sys.stdout.buffer.write(dump_here(int(sys.argv[2]), int(sys.argv[3])))
    sys.exit(0)

subprocess.run(["ip", "netns", "del", NS], capture_output=True)
subprocess.run(["ip", "netns", "add", NS], check=True)
try:
    sh("ip", "link", "add", "va", "type", "veth", "peer", "name", "vb")
    sh("ip", "link", "set", "va", "up"); sh("ip", "link", "set", "vb", "up")
    idx = int(subprocess.run(["ip", "netns", "exec", NS, "cat", "/sys/class/net/va/ifindex"],
                             check=True, capture_output=True).stdout)
    def save(case, kinds=((38, "qdisc"), (42, "class"))):
        for kind, what in kinds:
            b = dump(kind, idx)
            open(os.path.join(out, f"tc-{case}-{what}-{rel}.bin"), "wb").write(b)
            print(case, what, len(b))
    save("none")
    sh("tc", "qdisc", "add", "dev", "va", "root", "tbf", "rate", "200mbit", "burst", "256kb",
       "latency", "50ms")
    save("tbf")
    sh("tc", "qdisc", "del", "dev", "va", "root")
    sh("tc", "qdisc", "add", "dev", "va", "root", "handle", "1:", "htb", "default", "20")
    sh("tc", "class", "add", "dev", "va", "parent", "1:", "classid", "1:10", "htb", "rate",
       "200mbit", "ceil", "200mbit")
    sh("tc", "class", "add", "dev", "va", "parent", "1:", "classid", "1:20", "htb", "rate",
       "40gbit", "ceil", "40gbit")
    save("htb")
    for f in U32_FILTERS:
        sh("tc", "filter", "add", "dev", "va", "parent", "1:", *f.split())
    save("u32", ((46, "filter"),))
    sh("tc", "qdisc", "del", "dev", "va", "root")
    sh("tc", "qdisc", "add", "dev", "va", "ingress")
    save("ingress")
finally:
    subprocess.run(["ip", "netns", "del", NS])
