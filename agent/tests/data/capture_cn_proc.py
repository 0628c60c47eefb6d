# Records real process connector datagrams (netlink NETLINK_CONNECTOR, CN_IDX_PROC) of this
# machine for the parser tests: the subscription ack, then fork/exec/exit of `sh -c 'exit 3'`
# and of a `sleep` killed by SIGKILL. Needs root in the initial pid and network namespaces.
#   python3 capture_cn_proc.py OUT.bin     (each datagram written as u32 length + bytes)
import socket, struct, os, sys, time, subprocess, select
s = socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, 11)
s.bind((os.getpid(), 1))
cn = struct.pack("=IIIIHH", 1, 1, 0, 0, 4, 0) + struct.pack("=I", 1)
s.send(struct.pack("=IHHII", 16 + len(cn), 3, 0, 0, os.getpid()) + cn)
out = sys.argv[1]
got = []
def drain(t):
    end = time.time() + t
    while time.time() < end:
        r,_,_ = select.select([s],[],[],0.05)
        if r: got.append(s.recv(65536))
drain(0.3)
p = subprocess.Popen(["sh", "-c", "exit 3"]); p.wait()
q = subprocess.Popen(["sleep", "100"]); time.sleep(0.2); q.kill(); q.wait()
drain(0.5)
mine = {p.pid, q.pid}
keep = []
for d in got:
    what = struct.unpack_from("=I", d, 36)[0]
    if what == 0:
        keep.append(("ack", d)); continue
    pid = struct.unpack_from("=I", d, 52)[0] if what != 1 else struct.unpack_from("=I", d, 60)[0]
    if pid in mine:
        keep.append((hex(what), d))
for i,(w,d) in enumerate(keep):
    print(i, w, len(d), d.hex())
with open(out, "wb") as f:
    for w,d in keep:
        f.write(struct.pack("=I", len(d)) + d)
print("pids", p.pid, q.pid)
