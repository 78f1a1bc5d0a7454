"""The installer (lit.install) against a real HTTP server on 127.0.0.1.

The server serves archives built by the tests: a tar.gz whose ACE member is
a small shell script (a test double for the ACE binary, which cannot be
obtained here; it answers ``-V`` like ACE 0.9.34 and "compiles" by copying
the config file) and a bzip2-compressed stand-in grammar image.
"""

from __future__ import annotations

import bz2
import hashlib
import io
import os
import socket
import stat
import tarfile
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from lit.errors import ChecksumError, GrammarError, InstallError
from lit.grammar import (
    file_sha256,
    load_profile,
    read_registry,
    registry_path,
    resolve_grammar,
)
from lit.install import (
    add_grammar,
    compile_grammar,
    decompress_bz2,
    download,
    install_grammar,
    safe_extract,
)

FAKE_ACE = """#!/bin/sh
# test double for ACE (not available here): answers -V like ACE {version}
# and "compiles" a grammar (-g CONFIG -G OUT) by copying CONFIG to OUT
if [ "$1" = "-V" ]; then
  echo "ACE version {version}"
  echo "compiled at 00:00:00 on Jan  1 2021"
  exit 0
fi
cfg=""; out=""
while [ $# -gt 0 ]; do
  case "$1" in
    -g) cfg="$2"; shift ;;
    -G) out="$2"; shift ;;
  esac
  shift
done
if [ -n "$out" ] && [ -f "$cfg" ]; then
  echo "compiling $cfg" >&2
  cat "$cfg" > "$out"
  exit 0
fi
echo "fake ace: cannot compile $cfg" >&2
exit 1
"""

IMAGE = b"stand-in grammar image\n" * 500


def fake_ace_bytes(version: str = "0.9.34") -> bytes:
    return FAKE_ACE.format(version=version).encode()


def tar_gz(members: list[tuple[tarfile.TarInfo, bytes | None]]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for info, data in members:
            if data is not None:
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
            else:
                tar.addfile(info)
    return buf.getvalue()


def member(
    name: str, data: bytes | None = None, *, mode: int = 0o644,
    type: bytes = tarfile.REGTYPE, linkname: str = "",
) -> tuple[tarfile.TarInfo, bytes | None]:
    info = tarfile.TarInfo(name)
    info.mode = mode
    info.type = type
    info.linkname = linkname
    return info, data


def ace_archive(version: str = "0.9.34", extra: list | None = None) -> bytes:
    return tar_gz([
        member(f"ace-{version}", type=tarfile.DIRTYPE, mode=0o755),
        member(f"ace-{version}/ace", fake_ace_bytes(version), mode=0o755),
        member(f"ace-{version}/README", b"ACE stand-in\n"),
        *(extra or []),
    ])


# --------------------------------------------------------------------------
# a real HTTP server on 127.0.0.1


class Server:
    def __init__(self) -> None:
        self.files: dict[str, tuple[bytes, int]] = {}
        self.requests: list[str] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                server.requests.append(self.path)
                spec = server.files.get(self.path)
                if spec is None:
                    self.send_error(404, "Not Found")
                    return
                body, declared = spec
                self.send_response(200)
                self.send_header("Content-Type", "application/octet-stream")
                self.send_header("Content-Length", str(declared))
                self.end_headers()
                self.wfile.write(body)  # fewer bytes than declared when truncating

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def serve(self, path: str, body: bytes, *, declared: int | None = None) -> str:
        self.files[path] = (body, len(body) if declared is None else declared)
        return self.url(path)


@pytest.fixture
def server() -> Iterator[Server]:
    s = Server()
    s.thread.start()
    try:
        yield s
    finally:
        s.httpd.shutdown()
        s.httpd.server_close()
        s.thread.join()


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


PROFILE = """\
name = "{name}"
erg_version = "9999"
ace_version = "{ace_version}"
description = "a test grammar served from 127.0.0.1"

[ace.{platform}]
url = "{ace_url}"
sha256 = "{ace_sha}"
member = "ace-{ace_version}/ace"

[image.{platform}]
url = "{image_url}"
sha256 = "{image_sha}"

[semantics]
negation = "neg"
passive = "parg_d"
itcleft = ""
itcleft_unsupported = "test-erg does not generate it-clefts"
modal_aspect = "minus"

[semantics.modals]
may = "_may_v_modal"

[semantics.modals_unsupported]
"""


def write_profile(home: Path, *, name: str = "test-erg", ace_url: str, image_url: str,
                  ace_sha: str = "", image_sha: str = "", ace_version: str = "0.9.34",
                  platform: str | None = None):
    from lit.grammar import current_platform

    (home / "grammars").mkdir(exist_ok=True)
    (home / "grammars" / f"{name}.toml").write_text(PROFILE.format(
        name=name, ace_url=ace_url, image_url=image_url, ace_sha=ace_sha,
        image_sha=image_sha, ace_version=ace_version,
        platform=platform or current_platform(),
    ))
    return load_profile(name, home=home)


def files_under(root: Path) -> list[str]:
    """Every file and directory under *root* (relative), except user profiles."""
    return sorted(
        str(p.relative_to(root)) for p in root.rglob("*")
        if not (p.parent == root / "grammars" and p.suffix == ".toml")
        and p != root / "grammars"
    )


def serve_grammar(server: Server, *, archive: bytes | None = None,
                  image: bytes = IMAGE) -> tuple[str, str]:
    ace_url = server.serve("/ace-0.9.34-x86-64.tar.gz", archive or ace_archive())
    image_url = server.serve("/test-erg-0.9.34.dat.bz2", bz2.compress(image))
    return ace_url, image_url


# --------------------------------------------------------------------------
# good archive


def test_install_good_archive(lit_home, server):
    ace_url, image_url = serve_grammar(server)
    profile = write_profile(lit_home, ace_url=ace_url, image_url=image_url)
    seen: list[tuple[str, int, int | None]] = []
    entry = install_grammar(profile, home=lit_home,
                            progress=lambda label, done, total: seen.append((label, done, total)))

    image = lit_home / "grammars" / "test-erg" / "test-erg-0.9.34.dat"
    ace = lit_home / "ace" / "0.9.34" / "ace"
    assert entry.image == image and image.read_bytes() == IMAGE
    assert entry.ace == ace and ace.read_bytes() == fake_ace_bytes()
    assert ace.stat().st_mode & stat.S_IXUSR
    assert (entry.source, entry.ace_version) == ("downloaded", "0.9.34")
    assert entry.image_sha256 == hashlib.sha256(IMAGE).hexdigest()
    assert entry.ace_sha256 == file_sha256(ace)
    assert entry.downloads == {
        ace_url: hashlib.sha256(server.files["/ace-0.9.34-x86-64.tar.gz"][0]).hexdigest(),
        image_url: hashlib.sha256(server.files["/test-erg-0.9.34.dat.bz2"][0]).hexdigest(),
    }
    assert read_registry(lit_home) == {"test-erg": entry}
    # progress reached the end of each file
    for label, body in (("test-erg image", server.files["/test-erg-0.9.34.dat.bz2"][0]),
                        ("ACE 0.9.34", server.files["/ace-0.9.34-x86-64.tar.gz"][0])):
        assert (label, len(body), len(body)) in seen
    # nothing else was left behind (no staging, no archives)
    assert files_under(lit_home) == [
        "ace", "ace/0.9.34", "ace/0.9.34/ace", "grammars/test-erg",
        "grammars/test-erg/test-erg-0.9.34.dat", "registry.json", "registry.lock",
    ]

    g = resolve_grammar("test-erg", home=lit_home)
    assert (g.image, g.ace, g.source, g.ace_version) == (image, ace, "downloaded", "0.9.34")

    # a later modification of the image is detected on load
    with open(image, "ab") as f:
        f.write(b"tampered")
    with pytest.raises(ChecksumError, match="lit grammar install test-erg"):
        resolve_grammar("test-erg", home=lit_home)


def test_install_twice_reuses_and_force_reinstalls(lit_home, server):
    ace_url, image_url = serve_grammar(server)
    profile = write_profile(lit_home, ace_url=ace_url, image_url=image_url)
    first = install_grammar(profile, home=lit_home)
    assert install_grammar(profile, home=lit_home) == first  # already installed: no download
    assert len(server.requests) == 2
    first.image.unlink()  # broken installation: installed again
    first = install_grammar(profile, home=lit_home)
    assert first.image.is_file()
    assert server.requests[2:] == ["/test-erg-0.9.34.dat.bz2"]  # ACE reused
    del server.requests[2:]
    # a second grammar with the same ACE version reuses the installed ACE
    image2 = server.serve("/other.dat.bz2", bz2.compress(b"other image"))
    other = write_profile(lit_home, name="other-erg", ace_url=ace_url, image_url=image2)
    entry = install_grammar(other, home=lit_home)
    assert entry.ace == first.ace and entry.ace_sha256 == first.ace_sha256
    assert server.requests == ["/test-erg-0.9.34.dat.bz2", "/ace-0.9.34-x86-64.tar.gz",
                               "/other.dat.bz2"]
    # force downloads everything again and replaces the files
    server.serve("/test-erg-0.9.34.dat.bz2", bz2.compress(b"new image"))
    again = install_grammar(profile, home=lit_home, force=True)
    assert again.image.read_bytes() == b"new image"
    assert len(server.requests) == 5
    assert resolve_grammar("test-erg", home=lit_home).image_sha256 == again.image_sha256
    assert resolve_grammar("other-erg", home=lit_home).ace == first.ace
    assert not (lit_home / ".tmp").exists()


def test_install_with_published_checksums(lit_home, server):
    ace_url, image_url = serve_grammar(server)
    profile = write_profile(
        lit_home, ace_url=ace_url, image_url=image_url,
        ace_sha=hashlib.sha256(server.files["/ace-0.9.34-x86-64.tar.gz"][0]).hexdigest(),
        image_sha=hashlib.sha256(server.files["/test-erg-0.9.34.dat.bz2"][0]).hexdigest(),
    )
    assert install_grammar(profile, home=lit_home).image.read_bytes() == IMAGE


# --------------------------------------------------------------------------
# failures leave nothing behind


@pytest.mark.parametrize("which", ["image", "ace"])
def test_wrong_checksum(lit_home, server, which):
    ace_url, image_url = serve_grammar(server)
    kwargs = {f"{which}_sha": "0" * 64}
    profile = write_profile(lit_home, ace_url=ace_url, image_url=image_url, **kwargs)
    with pytest.raises(ChecksumError) as info:
        install_grammar(profile, home=lit_home)
    message = str(info.value)
    assert "checksum mismatch" in message and ("0" * 64) in message
    assert (ace_url if which == "ace" else image_url) in message
    assert "lit grammar add test-erg --image PATH --ace PATH" in message
    assert files_under(lit_home) == []
    assert not registry_path(lit_home).exists()


UNSAFE = {
    "dotdot": lambda tmp: [member("ace-0.9.34/../../evil", b"evil")],
    "absolute": lambda tmp: [member(str(tmp / "abs-evil"), b"evil")],
    "symlink-escape": lambda tmp: [
        member("ace-0.9.34/link", type=tarfile.SYMTYPE, linkname="../../.."),
        member("ace-0.9.34/link/evil", b"evil"),
    ],
    "symlink-absolute": lambda tmp: [
        member("ace-0.9.34/link", type=tarfile.SYMTYPE, linkname=str(tmp)),
    ],
    "hardlink-escape": lambda tmp: [
        member("ace-0.9.34/hard", type=tarfile.LNKTYPE, linkname="../outside"),
    ],
    "device": lambda tmp: [member("ace-0.9.34/dev", type=tarfile.CHRTYPE)],
    "fifo": lambda tmp: [member("ace-0.9.34/fifo", type=tarfile.FIFOTYPE)],
}


@pytest.mark.parametrize("kind", sorted(UNSAFE))
def test_unsafe_archive_is_refused(lit_home, server, tmp_path, kind):
    # the unsafe member comes first, so a naive extractor would write it
    extra = UNSAFE[kind](tmp_path)
    archive = tar_gz([*extra, member("ace-0.9.34/ace", fake_ace_bytes(), mode=0o755)])
    ace_url, image_url = serve_grammar(server, archive=archive)
    profile = write_profile(lit_home, ace_url=ace_url, image_url=image_url)
    before = sorted(p.name for p in tmp_path.iterdir())
    with pytest.raises(InstallError, match=r"refusing to unpack .*ace-0\.9\.34-x86-64\.tar\.gz"):
        install_grammar(profile, home=lit_home)
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing written outside
    assert not list(tmp_path.rglob("*evil*"))
    assert files_under(lit_home) == []


def test_safe_extract_allows_internal_links(tmp_path):
    archive = tmp_path / "ok.tar.gz"
    archive.write_bytes(tar_gz([
        member("d", type=tarfile.DIRTYPE, mode=0o755),
        member("d/file", b"data"),
        member("d/sym", type=tarfile.SYMTYPE, linkname="file"),
        member("d/hard", type=tarfile.LNKTYPE, linkname="d/file"),
    ]))
    out = tmp_path / "out"
    out.mkdir()
    assert safe_extract(archive, out) == ["d", "d/file", "d/sym", "d/hard"]
    assert (out / "d" / "sym").read_bytes() == b"data"
    assert (out / "d" / "hard").read_bytes() == b"data"


def test_missing_member(lit_home, server):
    archive = tar_gz([member("ace-0.9.34/not-ace", b"x")])
    ace_url, image_url = serve_grammar(server, archive=archive)
    profile = write_profile(lit_home, ace_url=ace_url, image_url=image_url)
    with pytest.raises(InstallError, match="does not contain 'ace-0.9.34/ace'"):
        install_grammar(profile, home=lit_home)
    assert files_under(lit_home) == []


def test_truncated_download(lit_home, server):
    ace_url, image_url = serve_grammar(server)
    body = server.files["/test-erg-0.9.34.dat.bz2"][0]
    server.serve("/test-erg-0.9.34.dat.bz2", body[: len(body) // 2], declared=len(body))
    profile = write_profile(lit_home, ace_url=ace_url, image_url=image_url)
    with pytest.raises(InstallError) as info:
        install_grammar(profile, home=lit_home)
    message = str(info.value)
    assert image_url in message
    assert f"{len(body) // 2} of {len(body)} bytes" in message
    assert "lit grammar add test-erg" in message
    assert files_under(lit_home) == []


def test_http_error(lit_home, server):
    ace_url = server.serve("/ace-0.9.34-x86-64.tar.gz", ace_archive())
    profile = write_profile(lit_home, ace_url=ace_url, image_url=server.url("/missing.dat.bz2"))
    with pytest.raises(InstallError, match=r"cannot download http://127\.0\.0\.1:\d+/missing"
                                           r"\.dat\.bz2: HTTP 404"):
        install_grammar(profile, home=lit_home)
    assert files_under(lit_home) == []


def test_server_down(lit_home):
    port = closed_port()
    image_url = f"http://127.0.0.1:{port}/test-erg.dat.bz2"
    profile = write_profile(lit_home, ace_url=f"http://127.0.0.1:{port}/ace.tar.gz",
                            image_url=image_url)
    with pytest.raises(InstallError) as info:
        install_grammar(profile, home=lit_home, timeout=5)
    message = str(info.value)
    assert f"cannot download {image_url}" in message
    assert "lit grammar add test-erg --image PATH --ace PATH" in message
    assert "lit grammar compile test-erg --source DIR" in message
    assert files_under(lit_home) == []


def test_corrupt_bz2(lit_home, server):
    ace_url, image_url = serve_grammar(server)
    server.serve("/test-erg-0.9.34.dat.bz2", b"BZh9 this is not bzip2 data")
    profile = write_profile(lit_home, ace_url=ace_url, image_url=image_url)
    with pytest.raises(InstallError, match="cannot decompress"):
        install_grammar(profile, home=lit_home)
    assert files_under(lit_home) == []


def test_ace_version_mismatch(lit_home, server):
    # the archive's binary reports 0.9.33, the profile says its image needs 0.9.34
    archive = tar_gz([member("ace-0.9.34/ace", fake_ace_bytes("0.9.33"), mode=0o755)])
    ace_url, image_url = serve_grammar(server, archive=archive)
    profile = write_profile(lit_home, ace_url=ace_url, image_url=image_url)
    with pytest.raises(InstallError, match="contains ACE 0.9.33.*needs ACE 0.9.34"):
        install_grammar(profile, home=lit_home)
    assert files_under(lit_home) == []


def test_no_image_for_platform(lit_home):
    profile = load_profile("erg-2020", home=lit_home)
    with pytest.raises(InstallError, match="no published image.*lit grammar compile erg-2020"):
        install_grammar(profile, home=lit_home)
    profile = load_profile("erg-2025", home=lit_home)
    with pytest.raises(InstallError, match="no image download for platform darwin-x86_64"):
        install_grammar(profile, home=lit_home, platform="darwin-x86_64")
    assert files_under(lit_home) == []


def test_foreign_platform_goes_to_its_own_directory(lit_home, server):
    ace_url, image_url = serve_grammar(server)
    profile = write_profile(lit_home, ace_url=ace_url, image_url=image_url,
                            platform="linux-aarch64")
    from lit.grammar import current_platform

    if current_platform() == "linux-aarch64":
        pytest.skip("needs a platform other than linux-aarch64")
    entry = install_grammar(profile, home=lit_home, platform="linux-aarch64")
    assert entry.ace == lit_home / "ace" / "0.9.34-linux-aarch64" / "ace"
    assert entry.platform == "linux-aarch64"


# --------------------------------------------------------------------------
# building blocks


def test_download_function(tmp_path, server):
    url = server.serve("/f.bin", b"x" * 200_000)
    dest = tmp_path / "f.bin"
    seen = []
    sha = download(url, dest, progress=lambda done, total: seen.append((done, total)))
    assert sha == hashlib.sha256(b"x" * 200_000).hexdigest()
    assert dest.read_bytes() == b"x" * 200_000
    assert seen[0] == (0, 200_000) and seen[-1] == (200_000, 200_000)
    with pytest.raises(ChecksumError):
        download(url, tmp_path / "g.bin", sha256="f" * 64)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.bin"]


def test_decompress_bz2(tmp_path):
    src = tmp_path / "a.bz2"
    src.write_bytes(bz2.compress(b"hello" * 1000))
    decompress_bz2(src, tmp_path / "a")
    assert (tmp_path / "a").read_bytes() == b"hello" * 1000
    src.write_bytes(bz2.compress(b"hello")[:-5])
    with pytest.raises(InstallError, match="cannot decompress"):
        decompress_bz2(src, tmp_path / "b")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "a.bz2"]


# --------------------------------------------------------------------------
# add and compile


@pytest.fixture
def fake_ace(tmp_path) -> Path:
    path = tmp_path / "bin" / "ace"
    path.parent.mkdir()
    path.write_bytes(fake_ace_bytes())
    path.chmod(0o755)
    return path


def test_add_grammar(lit_home, tmp_path, fake_ace):
    image = tmp_path / "erg.dat"
    image.write_bytes(IMAGE)
    entry = add_grammar("erg-1214", image, fake_ace, home=lit_home)
    assert (entry.image, entry.ace, entry.source, entry.ace_version) == (
        image, fake_ace, "added", "0.9.34")
    assert entry.image_sha256 == hashlib.sha256(IMAGE).hexdigest()
    g = resolve_grammar("erg-1214", home=lit_home)
    assert (g.image, g.ace, g.source) == (image, fake_ace, "added")
    # without --ace: ACE comes from LIT_ACE or PATH at run time
    assert add_grammar("erg-2018", image, home=lit_home).ace is None
    with pytest.raises(GrammarError, match="grammar image not found"):
        add_grammar("erg-1214", tmp_path / "missing.dat", home=lit_home)
    with pytest.raises(GrammarError, match="unknown grammar 'nope'"):
        add_grammar("nope", image, home=lit_home)


def test_compile_grammar(lit_home, tmp_path, fake_ace):
    source = tmp_path / "erg"
    (source / "ace").mkdir(parents=True)
    (source / "ace" / "config.tdl").write_text(";; stand-in grammar config\n")
    entry = compile_grammar("erg-2020", source, ace=fake_ace, home=lit_home)
    image = lit_home / "grammars" / "erg-2020" / "erg-2020.dat"
    assert entry.image == image
    assert image.read_text() == ";; stand-in grammar config\n"
    assert (entry.source, entry.ace, entry.ace_version) == ("compiled", fake_ace, "0.9.34")
    assert resolve_grammar("erg-2020", home=lit_home).source == "compiled"
    assert not (lit_home / ".tmp").exists()


def test_compile_failures(lit_home, tmp_path, fake_ace):
    with pytest.raises(GrammarError, match="ace/config.tdl"):
        compile_grammar("erg-2020", tmp_path / "nowhere", ace=fake_ace, home=lit_home)
    source = tmp_path / "erg"
    (source / "ace").mkdir(parents=True)
    (source / "ace" / "config.tdl").write_text("x")
    failing = tmp_path / "bin" / "failing-ace"
    failing.write_text('#!/bin/sh\n[ "$1" = "-V" ] && { echo "ACE version 0.9.34"; exit 0; }\n'
                       'echo "error: could not load grammar" >&2\nexit 3\n')
    failing.chmod(0o755)
    with pytest.raises(InstallError, match="exit code 3.*could not load grammar"):
        compile_grammar("erg-2020", source, ace=failing, home=lit_home)
    assert files_under(lit_home) == []


def test_installed_files_are_readable_by_other_users(tmp_path):
    # a shared LIT_HOME (e.g. /opt/lit for a lab): downloads and the registry get
    # the usual permissions (0o666 less the umask), not mkstemp's owner-only 0o600
    from lit._fs import create_temp_file

    old = os.umask(0o022)
    try:
        fd, path = create_temp_file(tmp_path, ".x.", ".part")
        os.close(fd)
    finally:
        os.umask(old)
    assert os.stat(path).st_mode & 0o777 == 0o644
    assert Path(path).name.startswith(".x.") and path.endswith(".part")
    from lit.grammar import _write_registry, registry_path

    old = os.umask(0o022)
    try:
        _write_registry(tmp_path, {})
    finally:
        os.umask(old)
    assert os.stat(registry_path(tmp_path)).st_mode & 0o777 == 0o644
