#!/usr/bin/env python3
"""A real 3-member etcd cluster on loopback for the fleet tests and the bench.

Usage: etcd_cluster.py DIR [--tls] [--auth PREFIX]

Starts Debian's etcd (3.4) three times with TLS on the client URLs (a CA, a
server certificate for 127.0.0.1 and a client certificate, made with openssl;
clients must show theirs) when --tls is given, and
with etcd's auth on (user `tokenvault`, read-write on PREFIX only; `root` for
the tests' own etcdctl) when --auth is given. Prints one JSON line:
{"endpoints": [...], "ca", "cert", "key": paths, "password_file": path, "root_password": ...}
then obeys one command per stdin line, answering one line each:
  leader            -> index of the leader
  kill N            -> kill -9 member N; answers "killed"
  start N           -> starts member N again; answers "started" once healthy
  pids              -> JSON list of member pids
EOF on stdin stops the cluster.
"""
import json
import os
import signal
import socket
import subprocess
import sys
import time


def free_ports(n):
    socks, ports = [], []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
        ports.append(s.getsockname()[1])
    for s in socks:
        s.close()
    return ports


def run(*args, **kw):
    return subprocess.run(args, check=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, close_fds=True, **kw)


def make_certs(d):
    ca_key, ca = os.path.join(d, "ca.key"), os.path.join(d, "ca.pem")
    key, csr, cert = os.path.join(d, "server.key"), os.path.join(d, "server.csr"), os.path.join(d, "server.pem")
    ext = os.path.join(d, "san.ext")
    with open(ext, "w") as f:
        f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n")
    run("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", ca_key, "-out", ca, "-days", "2",
        "-subj", "/CN=tokenvault test etcd CA")
    run("openssl", "req", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", csr, "-subj", "/CN=127.0.0.1")
    run("openssl", "x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial", "-out", cert,
        "-days", "2", "-extfile", ext)
    # The clients' certificate: etcd with a trusted CA file asks every client for one.
    ckey, ccsr, ccert = os.path.join(d, "client.key"), os.path.join(d, "client.csr"), os.path.join(d, "client.pem")
    run("openssl", "req", "-newkey", "rsa:2048", "-nodes", "-keyout", ckey, "-out", ccsr, "-subj", "/O=tokenvault clients")
    # No CN: etcd 3.4's HTTP gateway refuses a client certificate that names one.
    run("openssl", "x509", "-req", "-in", ccsr, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial", "-out", ccert,
        "-days", "2", "-extfile", ext)
    for f in (ca_key, key, ckey):
        os.chmod(f, 0o600)
    return ca, cert, key, ccert, ckey


class Cluster:
    def __init__(self, d, tls):
        self.d = d
        self.tls = tls
        ports = free_ports(6)
        self.client = ports[:3]
        self.peer = ports[3:]
        scheme = "https" if tls else "http"
        self.endpoints = [f"{scheme}://127.0.0.1:{p}" for p in self.client]
        self.initial = ",".join(f"m{i}=http://127.0.0.1:{self.peer[i]}" for i in range(3))
        self.procs = [None] * 3
        self.certs = make_certs(d) if tls else None

    def start(self, i, state="new"):
        args = ["etcd", "--name", f"m{i}", "--data-dir", os.path.join(self.d, f"m{i}.data"),
                "--listen-client-urls", self.endpoints[i], "--advertise-client-urls", self.endpoints[i],
                "--listen-peer-urls", f"http://127.0.0.1:{self.peer[i]}",
                "--initial-advertise-peer-urls", f"http://127.0.0.1:{self.peer[i]}",
                "--initial-cluster", self.initial, "--initial-cluster-state", state,
                "--initial-cluster-token", "tokenvault-test", "--logger", "zap", "--log-outputs",
                os.path.join(self.d, f"m{i}.log")]
        if self.tls:
            ca, cert, key, _, _ = self.certs
            args += ["--cert-file", cert, "--key-file", key, "--trusted-ca-file", ca, "--client-cert-auth"]
        self.procs[i] = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                         stderr=subprocess.DEVNULL, close_fds=True, start_new_session=True)

    def ctl(self, *args, endpoints=None, user=None):
        base = ["etcdctl", "--endpoints", ",".join(endpoints or self.endpoints), "--dial-timeout", "2s",
                "--command-timeout", "5s"]
        if self.tls:
            base += ["--cacert", self.certs[0], "--cert", self.certs[3], "--key", self.certs[4]]
        if user:
            base += ["--user", user]
        return subprocess.run(base + list(args), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, close_fds=True,
                              env=dict(os.environ, ETCDCTL_API="3"), text=True)

    def wait_healthy(self, members, user=None, limit=30):
        deadline = time.time() + limit
        while time.time() < deadline:
            r = self.ctl("endpoint", "health", endpoints=[self.endpoints[i] for i in members], user=user)
            if r.returncode == 0 and r.stdout.count("is healthy") == len(members):
                return
            time.sleep(0.2)
        raise SystemExit("etcd did not become healthy: " + r.stdout)

    def leader(self, user=None):
        for _ in range(100):
            alive = [i for i in range(3) if self.procs[i] and self.procs[i].poll() is None]
            r = self.ctl("endpoint", "status", "-w", "json", endpoints=[self.endpoints[i] for i in alive], user=user)
            try:
                for i, st in zip(alive, json.loads(r.stdout)):
                    if st["Status"]["leader"] == st["Status"]["header"]["member_id"]:
                        return i
            except (ValueError, KeyError):
                pass
            time.sleep(0.1)
        return -1

    def stop(self):
        for p in self.procs:
            if p and p.poll() is None:
                p.send_signal(signal.SIGKILL)
                p.wait()


def main():
    d = os.path.abspath(sys.argv[1])
    tls = "--tls" in sys.argv
    prefix = sys.argv[sys.argv.index("--auth") + 1] if "--auth" in sys.argv else None
    os.makedirs(d, mode=0o700, exist_ok=True)
    c = Cluster(d, tls)
    for i in range(3):
        c.start(i)
    try:
        c.wait_healthy(range(3))
        info = {"endpoints": c.endpoints, "ca": c.certs[0] if tls else None,
                "cert": c.certs[3] if tls else None, "key": c.certs[4] if tls else None}
        root = None
        if prefix is not None:
            root = "root-" + os.urandom(6).hex()
            password = "tv-" + os.urandom(6).hex()
            pw_file = os.path.join(d, "etcd-password")
            with open(os.open(pw_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
                f.write(password + "\n")
            for args in (("user", "add", "root:" + root), ("role", "add", "tokenvault"),
                         ("role", "grant-permission", "tokenvault", "--prefix=true", "readwrite", prefix),
                         ("user", "add", "tokenvault:" + password), ("user", "grant-role", "tokenvault", "tokenvault"),
                         ("auth", "enable")):
                r = c.ctl(*args)
                if r.returncode != 0:
                    raise SystemExit("etcdctl " + " ".join(args[:2]) + ": " + r.stdout)
            info.update(password_file=pw_file, root_password=root)
        user = "root:" + root if root else None
        print(json.dumps(info), flush=True)
        for line in sys.stdin:
            cmd = line.split()
            if not cmd:
                continue
            if cmd[0] == "leader":
                print(c.leader(user), flush=True)
            elif cmd[0] == "kill":
                p = c.procs[int(cmd[1])]
                p.send_signal(signal.SIGKILL)
                p.wait()
                print("killed", flush=True)
            elif cmd[0] == "start":
                c.start(int(cmd[1]), state="existing")
                c.wait_healthy([i for i in range(3) if c.procs[i].poll() is None], user=user)
                print("started", flush=True)
            elif cmd[0] == "pids":
                print(json.dumps([p.pid if p and p.poll() is None else None for p in c.procs]), flush=True)
            else:
                print("unknown command", flush=True)
    finally:
        c.stop()


if __name__ == "__main__":
    main()
