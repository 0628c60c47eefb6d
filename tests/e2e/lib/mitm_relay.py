#!/usr/bin/env python3
"""A man-in-the-middle relay for the frame-integrity test (issue 20), on loopback only.

    mitm_relay.py LISTEN_PORT AGENT_PORT LOG MODE[,MODE...]

Accepts collectors on 127.0.0.1:LISTEN_PORT and relays each to the agent on
127.0.0.1:AGENT_PORT. Frames from the agent are parsed (u32 LE length + body; from the third
frame on, after Challenge and AuthOk, a 16-byte MAC follows each) and passed through, except on
the Nth connection, which gets the Nth MODE once, after its 8th sealed frame:

    flip     one bit in the body of a Record frame
    drop     one Record frame left out
    replay   an earlier Record frame (and its MAC) sent again
    inject   a KeepAlive frame the relay made itself (with a made-up MAC) put in the stream
    reorder  two Record frames swapped
    pass     nothing

Connections after the last MODE are passed through untouched. The collector's frames to the
agent are passed through. Each action is one line in LOG.
"""
import os
import socket
import sys
import threading

MAC_LEN = 16
RECORD_TAG = 6  # postcard variant index of Message::Record (one varint byte)
TAMPER_AFTER = 8


def recv_exact(s, n):
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise EOFError
        buf += chunk
    return buf


def shut_both(*socks):
    for s in socks:
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def is_record(frame):
    return len(frame) > 5 and frame[5] == RECORD_TAG


def agent_to_collector(up, down, mode, log):
    index = 0  # frames from the agent on this connection
    sealed = 0
    held = None
    history = []
    done = mode == "pass"
    try:
        while True:
            head = recv_exact(up, 4)
            body = recv_exact(up, int.from_bytes(head, "little"))
            frame = head + body
            mac = recv_exact(up, MAC_LEN) if index >= 2 else b""
            index += 1
            if not mac:
                down.sendall(frame)
                continue
            sealed += 1
            out = frame + mac
            if not done and sealed > TAMPER_AFTER and is_record(frame):
                if mode == "flip":
                    b = bytearray(frame)
                    b[-1] ^= 0x01
                    out = bytes(b) + mac
                    done = True
                elif mode == "drop":
                    out = b""
                    done = True
                elif mode == "replay" and history:
                    out = frame + mac + history[0]
                    done = True
                elif mode == "inject":
                    # KeepAlive { time_ms: 1 }: Message tag 7, varint 1.
                    ka = bytes([3, 0, 0, 0, frame[4], 7, 1])
                    out = ka + os.urandom(MAC_LEN) + frame + mac
                    done = True
                elif mode == "reorder":
                    if held is None:
                        held = frame + mac
                        continue
                    out = frame + mac + held
                    done = True
                if done:
                    log(f"{mode} at sealed frame {sealed}")
            if is_record(frame) and len(history) < 4:
                history.append(frame + mac)
            if out:
                down.sendall(out)
    except (EOFError, OSError):
        pass
    finally:
        shut_both(up, down)


def collector_to_agent(down, up):
    try:
        while True:
            b = down.recv(65536)
            if not b:
                break
            up.sendall(b)
    except OSError:
        pass
    finally:
        shut_both(up, down)


def main():
    listen_port, agent_port, log_path, modes = (
        int(sys.argv[1]),
        int(sys.argv[2]),
        sys.argv[3],
        sys.argv[4].split(","),
    )
    lock = threading.Lock()

    def log(line):
        with lock, open(log_path, "a") as f:
            f.write(line + "\n")

    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", listen_port))
    srv.listen(8)
    log("listening")
    n = 0
    while True:
        down, _ = srv.accept()
        n += 1
        mode = modes[n - 1] if n <= len(modes) else "pass"
        log(f"connection {n}: {mode}")
        try:
            up = socket.create_connection(("127.0.0.1", agent_port), timeout=5)
            up.settimeout(None)
        except OSError as e:
            log(f"connection {n}: agent unreachable: {e}")
            down.close()
            continue
        threading.Thread(target=agent_to_collector, args=(up, down, mode, log), daemon=True).start()
        threading.Thread(target=collector_to_agent, args=(down, up), daemon=True).start()


if __name__ == "__main__":
    main()
