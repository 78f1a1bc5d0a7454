"""Download, verify, unpack and register ACE and grammar images.

Everything here follows the grammar profile; nothing is specific to a
particular grammar. Files are built in a staging directory inside
``$LIT_HOME`` and moved into place with :func:`os.replace` only when all
of them are complete and verified, so a failure (offline, HTTP error,
truncated download, wrong checksum, unsafe archive) leaves nothing
half-written behind.

Layout under ``$LIT_HOME``::

    registry.json                    installed grammars (lit.grammar)
    grammars/<name>.toml             user grammar profiles
    grammars/<name>/<image>.dat      downloaded or compiled images
    ace/<version>/ace                ACE binaries for this platform
    ace/<version>-<platform>/ace     ... for another platform (--platform)

Why this module is long: download, checksum, safe extraction and atomic placement
are one transaction (a failed install leaves nothing behind), shared by install, add
and compile.
"""

from __future__ import annotations

import bz2
import contextlib
import hashlib
import http.client
import logging
import os
import posixpath
import shutil
import stat
import tarfile
import tempfile
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path, PurePosixPath

from lit._fs import create_temp_file
from lit.ace import compile_image
from lit.ace import probe_version as probe_ace_version
from lit.errors import ACEError, ChecksumError, GrammarError, InstallError
from lit.grammar import (
    Download,
    GrammarProfile,
    Installation,
    current_platform,
    file_sha256,
    load_profile,
    now_iso,
    read_registry,
    register,
)

__all__ = [
    "Progress",
    "download",
    "decompress_bz2",
    "safe_extract",
    "install_grammar",
    "add_grammar",
    "compile_grammar",
]

logger = logging.getLogger(__name__)

#: ``progress(bytes_done, total)``; *total* is ``None`` when unknown.
Progress = Callable[[int, "int | None"], None]
#: ``progress(label, bytes_done, total)`` for :func:`install_grammar`.
LabeledProgress = Callable[[str, int, "int | None"], None]

_CHUNK = 1 << 16
_DEFAULT_TIMEOUT = 60.0
#: platforms that can run another platform's binaries
_PLATFORM_FALLBACKS = {"darwin-arm64": ("darwin-x86_64",)}  # Rosetta 2


# --------------------------------------------------------------------------
# building blocks


def download(
    url: str,
    dest: str | os.PathLike[str],
    *,
    sha256: str | None = None,
    progress: Progress | None = None,
    timeout: float = _DEFAULT_TIMEOUT,
) -> str:
    """Download *url* to *dest* and return the sha256 of what was received.

    The body is streamed to a temporary file next to *dest*, which is moved
    into place only when complete: the length matches ``Content-Length``
    and, if given, the sha256 matches *sha256*.

    Args:
        url: ``http``, ``https`` or ``file`` URL
        dest: destination path (its directory must exist)
        sha256: expected sha256 (hex) of the file, if known
        progress: called as ``progress(bytes_done, total)`` while reading
        timeout: seconds to wait for the connection and each read
    Raises:
        InstallError: network or HTTP failure, truncated download (the
            message names the URL)
        ChecksumError: the file does not match *sha256*
    """
    dest = Path(dest)
    h = hashlib.sha256()
    done = 0
    total: int | None = None
    fd, tmp = create_temp_file(dest.parent, f".{dest.name}.", ".part")
    try:
        with os.fdopen(fd, "wb") as out:
            try:
                request = urllib.request.Request(url, headers={"User-Agent": "lit-mrs"})
                with urllib.request.urlopen(request, timeout=timeout) as response:
                    length = response.headers.get("Content-Length")
                    total = int(length) if length and length.isdigit() else None
                    if progress is not None:
                        progress(0, total)
                    while True:
                        chunk = response.read(_CHUNK)
                        if not chunk:
                            break
                        out.write(chunk)
                        h.update(chunk)
                        done += len(chunk)
                        if progress is not None:
                            progress(done, total)
            except urllib.error.HTTPError as exc:
                raise InstallError(f"cannot download {url}: HTTP {exc.code} {exc.reason}") from exc
            except urllib.error.URLError as exc:
                raise InstallError(f"cannot download {url}: {exc.reason}") from exc
            except http.client.IncompleteRead as exc:
                raise InstallError(
                    f"download of {url} was cut off after {done + len(exc.partial)} bytes"
                    + (f" of {total}" if total is not None else "")
                ) from exc
            except (http.client.HTTPException, OSError, ValueError) as exc:
                raise InstallError(f"cannot download {url}: {exc}") from exc
        if total is not None and done != total:
            raise InstallError(
                f"download of {url} is truncated: received {done} of {total} bytes; try again"
            )
        observed = h.hexdigest()
        if sha256 is not None and observed != sha256.lower():
            raise ChecksumError(
                f"checksum mismatch for {url}: sha256 {observed}, expected {sha256} "
                "(the profile's value); the file was not kept. If upstream changed the "
                "file, update the profile's sha256"
            )
        os.replace(tmp, dest)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    logger.info("downloaded %s (%d bytes, sha256 %s)", url, done, observed)
    return observed


def decompress_bz2(src: str | os.PathLike[str], dest: str | os.PathLike[str]) -> None:
    """Decompress the bzip2 file *src* into *dest* (streaming, atomic).

    Raises:
        InstallError: if *src* is not valid bzip2 data
    """
    dest = Path(dest)
    fd, tmp = create_temp_file(dest.parent, f".{dest.name}.", ".part")
    try:
        with os.fdopen(fd, "wb") as out:
            try:
                with bz2.open(src, "rb") as f:
                    shutil.copyfileobj(f, out, _CHUNK)
            except (OSError, EOFError) as exc:
                raise InstallError(f"cannot decompress {src}: {exc}") from exc
        os.replace(tmp, dest)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def _check_member(member: tarfile.TarInfo, archive: str) -> None:
    """Refuse members that could write outside the target directory."""
    name = member.name

    def refuse(reason: str) -> InstallError:
        return InstallError(f"refusing to unpack {archive}: member {name!r} {reason}")

    if not name or "\x00" in name:
        raise refuse("has an empty or invalid name")
    path = PurePosixPath(name.replace("\\", "/"))
    if path.is_absolute() or (len(name) > 1 and name[1] == ":"):
        raise refuse("is an absolute path")
    if ".." in path.parts:
        raise refuse("contains a '..' component")
    if member.ischr() or member.isblk() or member.isfifo() or member.isdev():
        raise refuse("is a device or FIFO")
    if not (member.isfile() or member.isdir() or member.issym() or member.islnk()):
        raise refuse("has an unsupported type")
    if member.issym() or member.islnk():
        link = member.linkname.replace("\\", "/")
        if not link or posixpath.isabs(link):
            raise refuse(f"is a link to an absolute path ({member.linkname!r})")
        # symlinks resolve relative to their own directory, hard links to the root
        base = posixpath.dirname(path.as_posix()) if member.issym() else ""
        target = posixpath.normpath(posixpath.join(base, link))
        if target == ".." or target.startswith("../"):
            raise refuse(f"is a link escaping the target directory ({member.linkname!r})")


def safe_extract(archive: str | os.PathLike[str], dest: str | os.PathLike[str]) -> list[str]:
    """Extract the tar archive *archive* into *dest*, refusing unsafe members.

    Every member is checked before anything is written: absolute paths,
    ``..`` components, links whose target escapes *dest*, and device files
    make the whole archive fail. Python's ``data`` extraction filter is
    used as well where available. Returns the member names.

    Raises:
        InstallError: unreadable or unsafe archive (names the member)
    """
    archive_name = os.fspath(archive)
    dest = Path(dest)
    try:
        with tarfile.open(archive, "r:*") as tar:
            members = tar.getmembers()
            for member in members:
                _check_member(member, archive_name)
            if hasattr(tarfile, "data_filter"):
                tar.extractall(dest, members=members, filter="data")
            else:  # pragma: no cover - Python without extraction filters
                tar.extractall(dest, members=members)
    except (tarfile.TarError, EOFError) as exc:
        raise InstallError(f"cannot unpack {archive_name}: {exc}") from exc
    # belt and braces: nothing may resolve outside dest after extraction
    root = dest.resolve()
    for member in members:
        target = (dest / member.name).resolve()
        if target != root and root not in target.parents:
            raise InstallError(
                f"refusing {archive_name}: member {member.name!r} resolves outside {dest}"
            )
    return [m.name for m in members]


@contextlib.contextmanager
def _staging(home: Path) -> Iterator[Path]:
    """A fresh directory under ``$LIT_HOME/.tmp``, removed afterwards."""
    tmp_root = home / ".tmp"
    tmp_root.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=tmp_root, prefix="install-"))
    try:
        yield staging
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        with contextlib.suppress(OSError):
            tmp_root.rmdir()  # only if empty: other installs may be running


class _Placement:
    """Move finished directories into place; undo them if a later step fails."""

    def __init__(self, staging: Path) -> None:
        self._staging = staging
        self._done: list[tuple[Path, Path | None]] = []

    def put(self, built: Path, target: Path) -> None:
        target.parent.mkdir(parents=True, exist_ok=True)
        backup: Path | None = None
        if target.exists():
            backup = Path(tempfile.mkdtemp(dir=self._staging, prefix="old-")) / target.name
            os.replace(target, backup)
        try:
            os.replace(built, target)
        except OSError:
            if backup is not None:
                os.replace(backup, target)
            raise
        self._done.append((target, backup))

    def rollback(self) -> None:
        for target, backup in reversed(self._done):
            shutil.rmtree(target, ignore_errors=True)
            if backup is not None:
                with contextlib.suppress(OSError):
                    os.replace(backup, target)
        self._done.clear()


def _manual_route(name: str) -> str:
    return (
        f"without network access to the grammar sites, get the files another way and "
        f"register them with `lit grammar add {name} --image PATH --ace PATH`, or compile "
        f"the grammar from source with `lit grammar compile {name} --source DIR`"
    )


def _with_route(exc: InstallError, name: str) -> InstallError:
    new = type(exc)(f"{exc}; {_manual_route(name)}")
    return new


def _pick_platform(profile: GrammarProfile, platform: str | None) -> str:
    if platform is not None:
        return platform
    here = current_platform()
    for candidate in (here, *_PLATFORM_FALLBACKS.get(here, ())):
        if candidate in profile.image or candidate in profile.ace:
            if candidate != here:
                logger.info("no %s downloads for %s; using %s", here, profile.name, candidate)
            return candidate
    return here


def _image_filename(download: Download) -> str:
    name = PurePosixPath(download.url.split("?", 1)[0]).name or "image.dat"
    return name[: -len(".bz2")] if name.endswith(".bz2") else name


def _make_executable(path: Path) -> None:
    mode = path.stat().st_mode
    path.chmod(mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def _ace_dir(home: Path, version: str, platform: str) -> Path:
    leaf = version if platform == current_platform() else f"{version}-{platform}"
    return home / "ace" / leaf


def _reusable_ace(home: Path, path: Path, platform: str) -> Installation | None:
    """A registry entry whose ACE binary is *path*, for *platform*, still intact."""
    if not path.is_file():
        return None
    for entry in read_registry(home).values():
        if entry.ace == path and entry.platform == platform and entry.ace_sha256:
            if file_sha256(path) == entry.ace_sha256:
                return entry
            logger.warning("installed ACE %s changed since it was recorded; re-downloading", path)
            return None
    return None


# --------------------------------------------------------------------------
# the three ways to get a grammar


def install_grammar(
    profile: GrammarProfile,
    *,
    home: str | os.PathLike[str],
    platform: str | None = None,
    progress: LabeledProgress | None = None,
    force: bool = False,
    timeout: float = _DEFAULT_TIMEOUT,
) -> Installation:
    """Download and register the ACE binary and image named by *profile*.

    An already-installed grammar is kept unless *force*. An ACE binary of
    the same version already installed for another grammar is reused
    (unless *force*). Downloads are verified against the profile's sha256
    when it has one; the sha256 of the installed files is recorded and
    checked on every later load.

    Args:
        profile: the grammar profile (URLs, versions)
        home: the lit data directory
        platform: platform to download for (default: this machine's)
        progress: called as ``progress(label, bytes_done, total)``
        force: re-download even if installed
        timeout: network timeout in seconds
    Raises:
        InstallError: no download for the platform, network/HTTP failure,
            truncated download, unsafe archive; the message names the URL
            and the manual route (``lit grammar add`` / ``compile``)
        ChecksumError: a download does not match the profile's sha256
    """
    home = Path(home)
    name = profile.name
    existing = read_registry(home).get(name)
    if existing is not None and not force:
        intact = existing.image.is_file() and (existing.ace is None or existing.ace.is_file())
        if intact:
            logger.info("grammar %s is already installed (%s); use force to re-install",
                        name, existing.image)
            return existing
        logger.warning("files of grammar %s are missing; installing it again", name)
    plat = _pick_platform(profile, platform)
    image_dl = profile.image.get(plat)
    ace_dl = profile.ace.get(plat)
    if image_dl is None:
        if profile.image:
            listed = ", ".join(sorted(profile.image))
            raise InstallError(
                f"grammar {name} has no image download for platform {plat} (only: {listed}); "
                f"register files you have with `lit grammar add {name} --image PATH --ace PATH`"
                f", or compile it with `lit grammar compile {name} --source DIR`"
            )
        note = f" ({profile.source})" if profile.source else ""
        raise InstallError(
            f"grammar {name} has no published image to download{note}; compile it from "
            f"source with `lit grammar compile {name} --source DIR`, or register an image you "
            f"have with `lit grammar add {name} --image PATH --ace PATH`"
        )

    native = plat == current_platform() or plat in _PLATFORM_FALLBACKS.get(current_platform(), ())
    ace_target_dir = _ace_dir(home, profile.ace_version, plat)
    ace_path = ace_target_dir / "ace"
    reuse = None if force else _reusable_ace(home, ace_path, plat)
    if ace_dl is None and reuse is None:
        logger.warning("grammar %s has no ACE download for %s; register one with "
                       "`lit grammar add %s --image PATH --ace PATH` or set LIT_ACE",
                       name, plat, name)

    def labeled(label: str) -> Progress | None:
        if progress is None:
            return None
        return lambda done, total: progress(label, done, total)

    home.mkdir(parents=True, exist_ok=True)
    downloads: dict[str, str] = {}
    with _staging(home) as staging:
        try:
            # 1. everything from the network, verified, in the staging area
            raw_image = staging / PurePosixPath(image_dl.url.split("?", 1)[0]).name
            downloads[image_dl.url] = download(
                image_dl.url, raw_image, sha256=image_dl.sha256,
                progress=labeled(f"{name} image"), timeout=timeout,
            )
            raw_ace: Path | None = None
            if ace_dl is not None and reuse is None:
                raw_ace = staging / (PurePosixPath(ace_dl.url.split("?", 1)[0]).name or "ace")
                downloads[ace_dl.url] = download(
                    ace_dl.url, raw_ace, sha256=ace_dl.sha256,
                    progress=labeled(f"ACE {profile.ace_version}"), timeout=timeout,
                )
            # 2. unpack
            grammar_dir = staging / "grammar"
            grammar_dir.mkdir()
            image_path = grammar_dir / _image_filename(image_dl)
            if raw_image.name.endswith(".bz2"):
                decompress_bz2(raw_image, image_path)
                raw_image.unlink()
            else:
                os.replace(raw_image, image_path)
            ace_dir: Path | None = None
            if raw_ace is not None and ace_dl is not None:
                ace_dir = staging / "ace"
                ace_dir.mkdir()
                _unpack_ace(raw_ace, ace_dl, staging / "unpacked", ace_dir / "ace")
        except InstallError as exc:
            raise _with_route(exc, name) from exc

        # 3. check the binary runs and is the right version (this platform only)
        ace_version = profile.ace_version
        if ace_dir is not None and native:
            observed = _try_ace_version(ace_dir / "ace")
            if observed is not None and observed != profile.ace_version:
                raise InstallError(
                    f"{ace_dl.url if ace_dl else 'ACE'} contains ACE {observed}, but the "
                    f"profile of {name} says its image needs ACE {profile.ace_version}"
                )
        image_sha256 = file_sha256(image_path)
        ace_sha256 = file_sha256(ace_dir / "ace") if ace_dir is not None else None

        # 4. move into place, then record; undo the moves if recording fails
        placement = _Placement(staging)
        final_image = home / "grammars" / name / image_path.name
        try:
            placement.put(grammar_dir, home / "grammars" / name)
            final_ace: Path | None = None
            if ace_dir is not None:
                placement.put(ace_dir, ace_target_dir)
                final_ace = ace_path
            elif reuse is not None:
                final_ace, ace_sha256 = reuse.ace, reuse.ace_sha256
                ace_version = reuse.ace_version or ace_version
            entry = Installation(
                name=name,
                image=final_image,
                source="downloaded",
                image_sha256=image_sha256,
                installed=now_iso(),
                ace=final_ace,
                ace_version=ace_version if final_ace is not None else None,
                ace_sha256=ace_sha256,
                platform=plat,
                downloads=downloads,
            )
            register(entry, home=home)
            if ace_dir is not None:
                _refresh_ace_hashes(home, final_ace, ace_sha256, plat, except_name=name)
        except BaseException:
            placement.rollback()
            raise
    logger.info("installed grammar %s: %s (ACE %s)", name, final_image, entry.ace or "not set")
    return entry


def _unpack_ace(raw: Path, dl: Download, scratch: Path, dest: Path) -> None:
    """Put the ACE binary from the downloaded file *raw* at *dest*."""
    if dl.member is None:
        # a bare binary (possibly bzip2-compressed)
        if raw.name.endswith(".bz2"):
            decompress_bz2(raw, dest)
        else:
            os.replace(raw, dest)
    else:
        scratch.mkdir()
        names = safe_extract(raw, scratch)
        member = scratch / dl.member
        if dl.member not in names and dl.member.rstrip("/") not in names:
            raise InstallError(
                f"{dl.url} does not contain {dl.member!r} (the profile's 'member'); "
                f"it has: {', '.join(names[:10])}"
            )
        if member.is_symlink() or not member.is_file():
            raise InstallError(f"{dl.url}: {dl.member!r} is not a regular file")
        os.replace(member, dest)
    _make_executable(dest)


def _try_ace_version(binary: Path) -> str | None:
    try:
        return probe_ace_version(binary)
    except ACEError as exc:
        logger.warning("could not check the ACE version: %s", exc)
        return None


def _refresh_ace_hashes(
    home: Path, ace: Path | None, sha256: str | None, platform: str, *, except_name: str
) -> None:
    """Other grammars sharing a re-downloaded ACE binary record its new hash."""
    if ace is None or sha256 is None:
        return
    for other in read_registry(home).values():
        if other.name != except_name and other.ace == ace and other.ace_sha256 != sha256:
            register(
                Installation.from_dict({**other.to_dict(), "ace_sha256": sha256}), home=home
            )


def add_grammar(
    name: str,
    image: str | os.PathLike[str],
    ace: str | os.PathLike[str] | None = None,
    *,
    home: str | os.PathLike[str],
) -> Installation:
    """Register an image (and ACE binary) already on disk as grammar *name*.

    The files are not copied; their absolute paths and observed sha256 are
    recorded (and verified on every load). *name* must have a profile.

    Raises:
        GrammarError: unknown grammar name, or a file is missing
        ACEError: *ace* does not run or does not report a version
    """
    home = Path(home)
    profile = load_profile(name, home=home)
    image_path = _existing_file(image, "grammar image")
    ace_path = _existing_file(ace, "ACE binary") if ace is not None else None
    ace_version = None
    if ace_path is not None:
        ace_version = probe_ace_version(ace_path)
        if ace_version != profile.ace_version:
            logger.warning(
                "ACE %s is %s, but the profile of %s names ACE %s; an image only runs "
                "with the ACE version that compiled it", ace_path, ace_version, name,
                profile.ace_version,
            )
    entry = Installation(
        name=name,
        image=image_path,
        source="added",
        image_sha256=file_sha256(image_path),
        installed=now_iso(),
        ace=ace_path,
        ace_version=ace_version,
        ace_sha256=file_sha256(ace_path) if ace_path is not None else None,
        platform=current_platform(),
    )
    home.mkdir(parents=True, exist_ok=True)
    register(entry, home=home)
    return entry


def _existing_file(path: str | os.PathLike[str], what: str) -> Path:
    p = Path(path).expanduser()
    if not p.is_file():
        raise GrammarError(f"{what} not found: {p}")
    return p.resolve()


def compile_grammar(
    name: str,
    source_dir: str | os.PathLike[str],
    *,
    ace: str | os.PathLike[str],
    home: str | os.PathLike[str],
    timeout: float | None = None,
) -> Installation:
    """Compile a grammar checkout with ACE and register the image.

    Runs ``ACE -g SOURCE_DIR/ace/config.tdl -G OUT`` and places the image at
    ``$LIT_HOME/grammars/<name>/<name>.dat``. The ACE binary is registered
    with it (an image only runs with the ACE that compiled it).

    Raises:
        GrammarError: unknown grammar, or no ``ace/config.tdl`` in *source_dir*
        ACEError: *ace* cannot be run
        InstallError: compilation failed (the message has ACE's last lines)
    """
    home = Path(home)
    load_profile(name, home=home)
    config = Path(source_dir).expanduser() / "ace" / "config.tdl"
    if not config.is_file():
        raise GrammarError(
            f"{config} not found: --source must be a grammar checkout containing ace/config.tdl"
        )
    ace_path = _existing_file(ace, "ACE binary")
    ace_version = probe_ace_version(ace_path)
    home.mkdir(parents=True, exist_ok=True)
    with _staging(home) as staging:
        built = staging / "grammar"
        built.mkdir()
        out = built / f"{name}.dat"
        try:
            compile_image(ace_path, config, out, timeout=timeout)
        except ACEError as exc:
            if "cannot run" in str(exc):
                raise
            raise InstallError(f"compiling {name} failed: {exc}") from exc
        placement = _Placement(staging)
        final_image = home / "grammars" / name / out.name
        entry = Installation(
            name=name,
            image=final_image,
            source="compiled",
            image_sha256=file_sha256(out),
            installed=now_iso(),
            ace=ace_path,
            ace_version=ace_version,
            ace_sha256=file_sha256(ace_path),
            platform=current_platform(),
        )
        try:
            placement.put(built, home / "grammars" / name)
            register(entry, home=home)
        except BaseException:
            placement.rollback()
            raise
    return entry
