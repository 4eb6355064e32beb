#!/usr/bin/python3
"""Asks a real interactive fish or zsh what TAB offers for a command line,
or a real interactive bash what its TAB shows.

Usage: complete_shell.py fish|zsh|bash|bash-line COMPLETION_SCRIPT WORD... (the last word is
the one being completed; give "" for an empty one). Prints one candidate per
line. The shell runs on a pseudo-terminal of its own (pexpect), since neither
completes outside interactive mode, and is killed if it outlives 20 s.

fish: `complete -C LINE`, the documented way to ask for completions. With
COMPLETION_SCRIPT "-", fish finds the script itself, as for an installed
command (XDG_DATA_DIRS/fish/vendor_completions.d), reading its own config.
bash: the script sourced, the line typed and TAB pressed with
show-all-if-ambiguous on; prints each word readline listed on the terminal
(as a user sees them: with `-o filenames`, a name's last path segment).
bash-line: the same, but prints the command line as TAB left it (what
readline inserted, quoted or not), then presses Enter on it.
zsh: compinit with the script's directory on fpath, then the line is typed and
completed by a widget; a compadd wrapper records every match zsh would offer
(the technique of zsh-capture-completion). With TV_ZCOMPDUMP set (a path in
the test class's temporary directory), compinit's dump is made there once and
copied for each zsh: making one is 0.3 s of CPU, checking a copy 16 ms; compinit
still makes its own when the copy does not match its fpath.
"""
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

import pexpect

LIMIT = 20

ZSHRC = r"""
fpath=(%(dir)s $fpath)
autoload -Uz compinit && compinit -u -d "$ZDOTDIR/.zcompdump"
compadd() {
    # Calls that only query (-O, -A, -D) are zsh's own bookkeeping.
    if [[ ${@[1,(i)(-|--)]} == *-(O|A|D)\ * ]]; then
        builtin compadd "$@"
        return $?
    fi
    local -a __hits
    builtin compadd -A __hits "$@"
    # Matches are kept quoted for the command line (it\'s); record the words.
    (( $#__hits )) && print -rl -- "${(@Q)__hits}" >> "$TV_OUT"
    builtin compadd "$@"
}
__tv_capture() {
    zle complete-word
    print -r -- __TV_DONE__ >> "$TV_OUT"
}
zle -N __tv_capture
bindkey '^T' __tv_capture
PS1='tv-ready> '
"""


def run(shell, script, words):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "out")
        open(out, "w").close()
        env = dict(os.environ, TV_OUT=out, TERM="dumb")
        line = " ".join(shlex.quote(w) if w else "" for w in words)
        if shell == "fish":
            command = "complete -C %s > %s" % (shlex.quote(line), shlex.quote(out))
            options = ["--private", "-i", "-c"]
            if script != "-":
                command = "source %s; %s" % (shlex.quote(script), command)
                options.insert(0, "--no-config")
            child = pexpect.spawn("fish", options + [command], env=env, timeout=LIMIT)
            child.expect(pexpect.EOF)
            child.close()
            with open(out) as f:
                # "candidate<TAB>description"
                return [l.split("\t")[0] for l in f.read().splitlines()]
        if shell == "bash":
            return bash_listing(script, line, env)
        if shell == "bash-line":
            return bash_line(script, line, env, out)
        env["ZDOTDIR"] = tmp
        script_dir = shlex.quote(os.path.dirname(os.path.abspath(script)))
        shared = env.get("TV_ZCOMPDUMP")
        if shared:
            if not os.path.exists(shared):
                partial = "%s.%d" % (shared, os.getpid())
                subprocess.run(["zsh", "-f", "-c", "fpath=(%s $fpath); autoload -Uz compinit; compinit -u -d %s"
                                % (script_dir, shlex.quote(partial))],
                               env=env, check=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
                os.replace(partial, shared)
            shutil.copyfile(shared, os.path.join(tmp, ".zcompdump"))
        with open(os.path.join(tmp, ".zshrc"), "w") as f:
            f.write(ZSHRC % {"dir": script_dir})
        child = pexpect.spawn("zsh", ["-i"], env=env, timeout=LIMIT)
        try:
            child.expect_exact("tv-ready> ")
            child.send(line + "\x14")
            deadline = time.time() + LIMIT
            while time.time() < deadline:
                with open(out) as f:
                    text = f.read()
                if "__TV_DONE__" in text:
                    break
                time.sleep(0.05)
            else:
                raise SystemExit("zsh did not finish completing within %d s" % LIMIT)
        finally:
            child.close(force=True)
        seen = []
        for hit in text.splitlines():
            if hit != "__TV_DONE__" and hit not in seen:
                seen.append(hit)
        return seen


def bash_listing(script, line, env):
    env = dict(env, PS1="tv-ready> ")
    child = pexpect.spawn("bash", ["--norc", "--noprofile", "-i"], env=env, timeout=LIMIT, dimensions=(40, 200))
    try:
        child.expect_exact("tv-ready> ")
        child.sendline("source %s; bind 'set show-all-if-ambiguous on'" % shlex.quote(script))
        child.expect_exact("tv-ready> ")
        child.send(line + "\t")
        # The listing, then the prompt and the line again.
        child.expect_exact("tv-ready> ")
        shown = child.before.decode()
    finally:
        child.close(force=True)
    return shown.split()


def bash_line(script, line, env, out):
    env = dict(env, PS1="tv-ready> ")
    child = pexpect.spawn("bash", ["--norc", "--noprofile", "-i"], env=env, timeout=LIMIT, dimensions=(40, 200))
    try:
        child.expect_exact("tv-ready> ")
        child.sendline("source %s; bind -x '\"\\C-t\": printf \"%%s\\n\" \"$READLINE_LINE\" > \"$TV_OUT\"'"
                       % shlex.quote(script))
        child.expect_exact("tv-ready> ")
        # readline reads keys in order: ^T runs once TAB's completion is done.
        child.send(line + "\t\x14")
        deadline = time.time() + LIMIT
        while time.time() < deadline and not open(out).read():
            time.sleep(0.05)
        child.send("\r")
        child.expect_exact("tv-ready> ")
    finally:
        child.close(force=True)
    with open(out) as f:
        return f.read().splitlines()


if __name__ == "__main__":
    if len(sys.argv) < 4 or sys.argv[1] not in ("fish", "zsh", "bash", "bash-line"):
        raise SystemExit(__doc__)
    for candidate in run(sys.argv[1], sys.argv[2], sys.argv[3:]):
        print(candidate)
