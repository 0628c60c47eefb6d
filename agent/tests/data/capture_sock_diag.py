# Records a real sock_diag dump (netlink NETLINK_SOCK_DIAG, inet_diag with INET_DIAG_INFO) and
# the matching /proc/net/tcp lines of this machine for the parser tests, for one loopback TCP
# connection made here (port 47351 → an ephemeral port; 100 000 bytes sent, 30 000 read):
# only the messages of its two ends are kept (other sockets of the machine are left out).
#   python3 capture_sock_diag.py OUTDIR     writes sock_diag-<kernel>.bin and proc_net_tcp-<kernel>.txt
import os, socket, struct, sys, time
out = sys.argv[1]
rel = os.uname().release.split("-")[0]
srv = socket.socket(); srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", 47351)); srv.listen(1)
cli = socket.create_connection(("127.0.0.1", 47351)); acc, _ = srv.accept()
cli.sendall(b"x" * 100000); got = 0
while got < 30000: got += len(acc.recv(30000 - got))
time.sleep(0.2)
ports = {47351, cli.getsockname()[1]}
nl = socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, 4)
req = struct.pack("=BBBBI", 2, 6, 2, 0, ~(1 << 10) & 0xffffffff) + b"\0" * 48
nl.send(struct.pack("=IHHII", 16 + len(req), 20, 0x301, 1, 0) + req)
keep = b""
done = False
while not done:
    d = nl.recv(65536); i = 0
    while i < len(d):
        ln, ty = struct.unpack_from("=IH", d, i)
        m = d[i:i + ln]
        if ty == 3:
            keep += m; done = True; break
        sport, dport = struct.unpack_from(">HH", m, 20)
        if sport in ports and dport in ports:
            keep += m
        i += (ln + 3) & ~3
open(os.path.join(out, f"sock_diag-{rel}.bin"), "wb").write(keep)
lines = open("/proc/net/tcp").read().splitlines()
mine = [lines[0]] + [l for l in lines[1:] if {int(l.split()[1].split(":")[1], 16), int(l.split()[2].split(":")[1], 16)} <= ports]
open(os.path.join(out, f"proc_net_tcp-{rel}.txt"), "w").write("\n".join(mine) + "\n")
print(len(keep), len(mine) - 1, ports)
