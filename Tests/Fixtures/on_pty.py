#!/usr/bin/env python3
"""Runs a command on a pseudo-terminal (pexpect), as a user at a terminal
would, with this process's environment; prints everything it wrote (CR
removed) and exits with its exit status.

Usage: on_pty.py COMMAND [ARGS…]     (PTY_TIMEOUT: seconds, default 60; PTY_COLUMNS: width, default 200;
                                      PTY_INTERRUPT_AFTER: text after which Ctrl-C is typed;
                                      PTY_PROMPT, PTY_ANSWER: a line typed once PTY_PROMPT is shown)
"""
import os
import sys

import pexpect

c = pexpect.spawn(sys.argv[1], sys.argv[2:], env=dict(os.environ), encoding="utf-8",
                  timeout=int(os.environ.get("PTY_TIMEOUT", "60")),
                  dimensions=(80, int(os.environ.get("PTY_COLUMNS", "200"))))
seen = ""
if os.environ.get("PTY_PROMPT"):
    c.expect_exact(os.environ["PTY_PROMPT"])
    seen = c.before + c.after
    c.sendline(os.environ.get("PTY_ANSWER", ""))
if os.environ.get("PTY_INTERRUPT_AFTER"):
    c.expect_exact(os.environ["PTY_INTERRUPT_AFTER"])
    seen += c.before + c.after
    c.sendintr()
c.expect(pexpect.EOF)
c.close()
sys.stdout.write((seen + c.before).replace("\r", ""))
sys.exit(c.exitstatus if c.exitstatus is not None else 128 + (c.signalstatus or 0))
