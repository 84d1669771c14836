"""The README's examples, run as written, in the order the README gives them.

Each fenced block is run by its language:

- `sh`: bash (`-e -o pipefail`), in one working folder shared by every block, with the server
  binary's folder first on PATH. The quick start starts `hotset serve &`; later blocks talk
  to that server, which the test stops at the end.
- `redis`: each line through `redis-cli`; the reply after `->`, when given, must match.
- `sql`: each line (a `--` comment after it dropped) through `hotset sql`; each must succeed.
- `toml`: the server must start with it as its config file.
- `python`: run as a script: embedded as written, then again with the `hotset.connect` line
  in place of the `hotset.open` one, against a fresh server.
- `json`: parsed; `text` and `rust`: illustrations, not run.

A block preceded by `<!-- readme-test: not run (reason) -->` is not run; a block of any other
language fails the test, so each new block is classified.

Files: blocks name the repository's files as a reader does from a checkout's root
(`examples/procedures/profiles.lua`): the repository's `examples` folder is linked into the
`sh` blocks' working folder and into the folders the `python` blocks run in.

Ports: the README uses the default ports 7379 and 7380. Other tests run on this machine at
the same time, so the test picks free ports, gives them to the server through its
environment variables (HOTSET_RESP_PORT, HOTSET_HTTP_PORT, and HOTSET_ADDR for the CLI) and
replaces 7379 and 7380 in the blocks' text with them; nothing else is changed.
"""
import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time

import pytest

from conftest import BIN, ROOT, Server

README = os.path.join(ROOT, "README.md")
SKIP = re.compile(r"<!--\s*readme-test:\s*not run\b.*-->")
RUN = {"sh", "redis", "sql", "toml", "python"}
CHECKED = {"json"}
ILLUSTRATIONS = {"text", "rust"}


class Block:
    def __init__(self, language, code, line, skipped):
        self.language = language
        self.code = code
        self.line = line  # the README line of the opening fence
        self.skipped = skipped

    def __repr__(self):
        return f"README.md:{self.line} ```{self.language}"


def blocks():
    """Every fenced block of the README, in order."""
    found, lines = [], open(README, encoding="utf-8").read().split("\n")
    i = 0
    while i < len(lines):
        fence = re.match(r"^```(\S*)\s*$", lines[i])
        if not fence:
            i += 1
            continue
        before = next((lines[j] for j in range(i - 1, -1, -1) if lines[j].strip()), "")
        end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
        found.append(Block(fence.group(1), "\n".join(lines[i + 1:end]) + "\n", i + 1, bool(SKIP.search(before))))
        i = end + 1
    return found


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_every_block_is_classified():
    found = blocks()
    assert len(found) > 10, found
    unknown = [b for b in found if b.language not in RUN | CHECKED | ILLUSTRATIONS]
    assert not unknown, f"fence these as one of {sorted(RUN | CHECKED | ILLUSTRATIONS)}: {unknown}"
    run = {b.language for b in found if b.language in RUN and not b.skipped}
    assert run == RUN, f"no runnable block of {RUN - run}"


class Session:
    """The shared working folder, environment and background server of the `sh` blocks."""

    def __init__(self, folder):
        self.folder = folder
        self.resp, self.http = free_port(), free_port()
        self.env = {
            **os.environ,
            "PATH": os.path.dirname(os.path.abspath(BIN)) + os.pathsep + os.environ.get("PATH", ""),
            "HOTSET_RESP_PORT": str(self.resp),
            "HOTSET_HTTP_PORT": str(self.http),
            "HOTSET_ADDR": f"127.0.0.1:{self.resp}",
            "HOTSET_LOG": "warn",
        }
        for name in ("HOTSET_PASSWORD", "HOTSET_DATA", "HOTSET_CONFIG", "HOTSET_TIMEOUT"):
            self.env.pop(name, None)

    def ports(self, code):
        return code.replace("7379", str(self.resp)).replace("7380", str(self.http))

    def run(self, block, argv, code=None):
        """Runs argv in the shared folder; output goes to a file (a background server keeps
        its standard streams open after the block ends, so no pipe would see an end)."""
        log = os.path.join(self.folder, ".readme-test.log")
        with open(log, "w") as out:
            proc = subprocess.Popen(argv, cwd=self.folder, env=self.env, stdin=subprocess.DEVNULL,
                                    stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
            try:
                status = proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                proc.kill()
                status = "a timeout after 120 s"
        output = open(log).read()
        assert status == 0, f"{block}: {code or argv} ended with {status}:\n{output}"
        return output

    def stop(self):
        """Stops the server the quick start left running (SIGTERM to the process id its
        INFO gives), if it is running."""
        info = subprocess.run(["redis-cli", "-p", str(self.resp), "INFO", "server"], capture_output=True, text=True)
        pid = re.search(r"^process_id:(\d+)", info.stdout, re.M)
        if not pid:
            return
        os.kill(int(pid.group(1)), signal.SIGTERM)
        deadline = time.time() + 30
        while time.time() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", self.resp)) != 0:
                    return
            time.sleep(0.1)
        pytest.fail("the README's server did not stop after SIGTERM")


def run_sh(session, block):
    session.run(block, ["bash", "-e", "-o", "pipefail", "-c", session.ports(block.code)], block.code)


# What an error reply starts with: Redis' words and the code words of `DOC.*` errors.
ERROR_WORDS = ("ERR", "(error)", "MISCONF", "NOT_FOUND", "ALREADY_EXISTS", "BAD_DOCUMENT", "BAD_QUERY", "SCHEMA",
               "LIMIT", "TIMEOUT", "STORAGE", "BAD_CHANGE", "BAD_REQUEST", "READ_ONLY")


def run_redis(session, block):
    for line in block.code.splitlines():
        if not line.strip():
            continue
        command, arrow, expected = line.partition(" -> ")
        argv = ["redis-cli", "-p", str(session.resp)] + shlex.split(session.ports(command))
        reply = session.run(block, argv, line).rstrip("\n")
        assert not reply.startswith(ERROR_WORDS), f"{block}: {line}: {reply}"
        expected = expected.strip()
        if expected.startswith("(integer) "):
            expected = expected[len("(integer) "):]
        elif expected.startswith("'") and expected.endswith("'"):
            expected = expected[1:-1]
        if arrow:
            assert reply == expected, f"{block}: {line}: the reply is {reply!r}"


def run_sql(session, block):
    for line in block.code.splitlines():
        statement = re.sub(r"\s+--\s.*$", "", line).strip()
        if statement:
            answer = json.loads(session.run(block, ["hotset", "sql", statement], line))
            assert "items" in answer, f"{block}: {line}: {answer}"


def run_toml(session, block, tmp_path):
    config = tmp_path / "hotset.toml"
    config.write_text(block.code)
    server = Server(str(tmp_path / "toml-data"), "--config", str(config))
    server.stop()


def link_examples(folder):
    """Links the repository's `examples` folder into `folder`, where the blocks run."""
    os.symlink(os.path.join(ROOT, "examples"), os.path.join(folder, "examples"))


def run_python(block, tmp_path):
    opening = [line for line in block.code.splitlines() if line.startswith("db = hotset.open(")]
    connecting = [line for line in block.code.splitlines() if line.startswith("# db = hotset.connect(")]
    assert len(opening) == 1 and len(connecting) == 1, f"{block}: one open line and one commented connect line"
    # Folders of each block's own (several blocks are Python).
    embedded = tmp_path / f"python-embedded-{block.line}"
    embedded.mkdir()
    link_examples(embedded)
    (embedded / "example.py").write_text(block.code)
    subprocess.run([sys.executable, "example.py"], cwd=embedded, check=True, timeout=120)
    # The same example as a client of a server: only the line that opens the database changes.
    client = tmp_path / f"python-client-{block.line}"
    client.mkdir()
    link_examples(client)
    server = Server(str(tmp_path / f"python-server-data-{block.line}"))
    try:
        connect = connecting[0][2:].replace("127.0.0.1:7379", server.address)
        code = block.code.replace(opening[0] + "\n", "").replace(connecting[0], connect)
        (client / "example.py").write_text(code)
        subprocess.run([sys.executable, "example.py"], cwd=client, check=True, timeout=120)
    finally:
        server.stop()


def test_the_readme_examples_run_as_written(tmp_path):
    if not os.path.exists(BIN):
        pytest.fail(f"no server binary at {BIN}: build it with `cargo build --release` or set HOTSET_BIN")
    folder = tmp_path / "checkout"
    folder.mkdir()
    link_examples(folder)
    session = Session(str(folder))
    ran = []
    try:
        for block in blocks():
            if block.skipped or block.language in ILLUSTRATIONS:
                continue
            if block.language == "sh":
                run_sh(session, block)
            elif block.language == "redis":
                run_redis(session, block)
            elif block.language == "sql":
                run_sql(session, block)
            elif block.language == "toml":
                run_toml(session, block, tmp_path)
            elif block.language == "python":
                run_python(block, tmp_path)
            elif block.language == "json":
                json.loads(block.code)
            ran.append(block)
    finally:
        session.stop()
    assert os.path.isdir(folder / "hotset-data"), "the quick start's server keeps its data in ./hotset-data"
    assert {b.language for b in ran} == RUN | CHECKED, ran
