"""What systemd does for a user socket unit and its service, and
systemd-socket-activate does not: it keeps the listening socket for good,
and starts the service again on the next connection after the service died.

    socket_supervisor.py SOCKET PIDFILE -- COMMAND ARGS...

The service gets the socket as fd 3 with LISTEN_FDS=1 and LISTEN_PID set to
its own pid (sd_listen_fds(3)); each pid started is appended to PIDFILE.

As systemd, it is the process that called listen(), so SO_PEERCRED on a
client's connection names it, not the service. It notes what systemd would
take badly: a SIGTERM (systemd --user starts exit.target) is written to
PIDFILE.term before it exits; a listening socket that polls as hung up or
in error once the service has left (someone called shutdown() on it: systemd
fails the socket unit) is written to PIDFILE.failed, and it stops serving.
"""
import os
import select
import signal
import socket
import sys


def main():
    path, pidfile = sys.argv[1], sys.argv[2]
    command = sys.argv[sys.argv.index("--") + 1:]
    if os.path.exists(path):
        os.unlink(path)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o077)
    listener.bind(path)
    os.umask(old)
    listener.listen(64)
    def terminated(*_):
        with open(pidfile + ".term", "a") as f:
            f.write("SIGTERM\n")
        sys.exit(0)

    signal.signal(signal.SIGTERM, terminated)
    child = None
    poller = select.poll()
    poller.register(listener.fileno(), select.POLLIN)
    while True:
        if child is not None:
            os.waitpid(child, 0)  # the service runs until it exits or is killed
            child = None
        events = dict(poller.poll())  # a connection waits: start the service
        if events.get(listener.fileno(), 0) & (select.POLLHUP | select.POLLERR | select.POLLNVAL):
            with open(pidfile + ".failed", "a") as f:
                f.write(f"listening socket polled {events[listener.fileno()]:#x}\n")
            signal.pause()  # a failed unit: the socket is kept, nothing is started
        child = os.fork()
        if child == 0:
            os.dup2(listener.fileno(), 3)
            os.set_inheritable(3, True)
            env = dict(os.environ, LISTEN_FDS="1", LISTEN_PID=str(os.getpid()))
            os.execve(command[0], command, env)
        with open(pidfile, "a") as f:
            f.write(f"{child}\n")


if __name__ == "__main__":
    try:
        main()
    except Exception:
        import traceback
        with open(sys.argv[2] + ".err", "w") as f:
            traceback.print_exc(file=f)
        raise
