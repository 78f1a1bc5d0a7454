"""Grammar profiles, the registry of installed grammars, and their resolution.

A *grammar profile* (``grammars/<name>.toml``) says what a grammar is: the
ERG version, the ACE version its official image was compiled with, where
the ACE binary and the image can be downloaded for each platform, and the
grammar-specific semantic conventions the transformation rules read (the
``[semantics]`` table). Profiles ship with lit; users add their own in
``$LIT_HOME/grammars/<name>.toml`` (a user profile replaces a shipped one of
the same name).

The *registry* (``$LIT_HOME/registry.json``) records which grammars are
installed: the image and ACE paths, the ACE version, how the files got
there (``downloaded``, ``added`` or ``compiled``) and their sha256, which
:func:`resolve_grammar` verifies on every load.

Environment variables are never read here: functions take an *env*
mapping (the CLI passes :data:`os.environ`). With ``env=None`` no
environment override applies and ``$LIT_HOME`` is the per-user default.

Example:
    >>> p = load_profile("erg-1214")
    >>> p.semantics["passive"]
    'parg_d'
    >>> grammar_env_var("erg-1214")
    'LIT_GRAMMAR_ERG_1214'

Why this module is long: profiles (TOML schema and validation), the registry of
installed files and resolution with environment overrides are one concept, a grammar's
identity; each part is small, and they share the validation helpers.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import hashlib
import json
import logging
import os
import platform as _platform
import re
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from lit._fs import create_temp_file
from lit.errors import ChecksumError, GrammarError

__all__ = [
    "PLATFORMS",
    "SOURCES",
    "Download",
    "GrammarProfile",
    "Installation",
    "Grammar",
    "lit_home",
    "current_platform",
    "grammar_env_var",
    "profile_dirs",
    "load_profile",
    "list_profiles",
    "default_grammar",
    "registry_path",
    "read_registry",
    "register",
    "unregister",
    "resolve_grammar",
    "with_checksum",
    "file_sha256",
    "now_iso",
]

logger = logging.getLogger(__name__)

#: Platform names a profile may use for its downloads.
PLATFORMS: frozenset[str] = frozenset(
    {"linux-x86_64", "linux-aarch64", "darwin-x86_64", "darwin-arm64"}
)

#: How the files of an installed grammar got there (``env``: from the environment).
SOURCES: tuple[str, ...] = ("downloaded", "added", "compiled", "env")

#: Environment variable naming the ACE binary (overrides the registry).
ACE_ENV_VAR = "LIT_ACE"
#: Environment variable naming the lit data directory.
HOME_ENV_VAR = "LIT_HOME"

_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*$")
_SHA256_RE = re.compile(r"^[0-9a-f]{64}$")
_URL_SCHEMES = ("http://", "https://", "file://")
_ACE_VERSION_RE = re.compile(r"ACE version\s+(\S+)")

_TOP_KEYS = {
    "name": str,
    "erg_version": str,
    "ace_version": str,
    "description": str,
    "default": bool,
    "source": str,
    "ace": dict,
    "image": dict,
    "semantics": dict,
}
_REQUIRED_KEYS = ("name", "erg_version", "ace_version", "description", "semantics")
_DOWNLOAD_KEYS = {"url": str, "sha256": str, "member": str}


# --------------------------------------------------------------------------
# records


@dataclass(frozen=True, slots=True)
class Download:
    """One downloadable file of a grammar profile.

    Args:
        url: where to get the file (``http``, ``https`` or ``file``)
        sha256: the published sha256 of the file at *url* (hex), if any
        member: for an archive (``.tar.gz``), the path of the wanted file
            inside it (e.g. ``ace-0.9.34/ace``)
    """

    url: str
    sha256: str | None = None
    member: str | None = None

    def to_dict(self) -> dict[str, str]:
        d = {"url": self.url}
        if self.sha256:
            d["sha256"] = self.sha256
        if self.member:
            d["member"] = self.member
        return d

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Download:
        return cls(
            url=data["url"],
            sha256=data.get("sha256") or None,
            member=data.get("member") or None,
        )


@dataclass(frozen=True, slots=True)
class GrammarProfile:
    """What a grammar is, where to get it, and its semantic conventions.

    Build one with :func:`load_profile` or :meth:`from_dict` (which
    validate); *semantics* is the ``[semantics]`` table as a plain dict.
    """

    name: str
    erg_version: str
    ace_version: str
    description: str
    ace: dict[str, Download] = field(default_factory=dict, hash=False)
    image: dict[str, Download] = field(default_factory=dict, hash=False)
    source: str | None = None
    semantics: dict[str, Any] = field(default_factory=dict, hash=False)
    path: Path | None = field(default=None, compare=False)
    default: bool = False

    @property
    def env_var(self) -> str:
        """The environment variable overriding this grammar's image."""
        return grammar_env_var(self.name)

    def to_dict(self) -> dict[str, Any]:
        """The profile as a TOML-shaped dict (``path`` only if known)."""
        d: dict[str, Any] = {
            "name": self.name,
            "erg_version": self.erg_version,
            "ace_version": self.ace_version,
            "description": self.description,
        }
        if self.default:
            d["default"] = True
        if self.source is not None:
            d["source"] = self.source
        d["ace"] = {p: dl.to_dict() for p, dl in self.ace.items()}
        d["image"] = {p: dl.to_dict() for p, dl in self.image.items()}
        d["semantics"] = copy.deepcopy(self.semantics)
        if self.path is not None:
            d["path"] = str(self.path)
        return d

    @classmethod
    def from_dict(
        cls, data: Mapping[str, Any], *, path: str | os.PathLike[str] | None = None
    ) -> GrammarProfile:
        """Validate *data* (a parsed profile) and build the profile.

        A ``path`` key in *data* (as written by :meth:`to_dict`) is used
        when *path* is not given.

        Raises:
            GrammarError: naming the file (or ``<dict>``) and the bad key
        """
        data = dict(data)
        given = data.pop("path", None)
        if path is None and given is not None:
            path = given
        return _profile_from_data(data, Path(path) if path is not None else None)


@dataclass(frozen=True, slots=True)
class Installation:
    """A registry entry: the files of one installed grammar.

    *image_sha256* and *ace_sha256* are the hashes of the installed files,
    verified on every load; *downloads* maps each downloaded URL to the
    sha256 of the file received (checked against the profile when it
    publishes one).
    """

    name: str
    image: Path
    source: str
    image_sha256: str
    installed: str
    ace: Path | None = None
    ace_version: str | None = None
    ace_sha256: str | None = None
    platform: str | None = None
    downloads: dict[str, str] = field(default_factory=dict, hash=False)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "image": str(self.image),
            "source": self.source,
            "image_sha256": self.image_sha256,
            "installed": self.installed,
            "ace": None if self.ace is None else str(self.ace),
            "ace_version": self.ace_version,
            "ace_sha256": self.ace_sha256,
            "platform": self.platform,
            "downloads": dict(self.downloads),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Installation:
        ace = data.get("ace")
        return cls(
            name=data["name"],
            image=Path(data["image"]),
            source=data["source"],
            image_sha256=data["image_sha256"],
            installed=data["installed"],
            ace=None if ace is None else Path(ace),
            ace_version=data.get("ace_version"),
            ace_sha256=data.get("ace_sha256"),
            platform=data.get("platform"),
            downloads=dict(data.get("downloads") or {}),
        )


@dataclass(frozen=True, slots=True)
class Grammar:
    """A resolved grammar: its profile and the files to run it with.

    *source* says where the image came from (``downloaded``, ``added``,
    ``compiled`` or ``env``); *ace_source* says the same of the ACE binary
    (``None`` when no binary is known: use ``ace`` on ``PATH``).
    """

    profile: GrammarProfile
    image: Path
    ace: Path | None
    source: str
    image_sha256: str | None
    ace_version: str | None
    ace_sha256: str | None = None
    ace_source: str | None = None
    installed: str | None = None

    @property
    def name(self) -> str:
        return self.profile.name

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "image": str(self.image),
            "ace": None if self.ace is None else str(self.ace),
            "source": self.source,
            "image_sha256": self.image_sha256,
            "ace_version": self.ace_version,
            "ace_sha256": self.ace_sha256,
            "ace_source": self.ace_source,
            "installed": self.installed,
            "profile": self.profile.to_dict(),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Grammar:
        ace = data.get("ace")
        return cls(
            profile=GrammarProfile.from_dict(data["profile"]),
            image=Path(data["image"]),
            ace=None if ace is None else Path(ace),
            source=data["source"],
            image_sha256=data.get("image_sha256"),
            ace_version=data.get("ace_version"),
            ace_sha256=data.get("ace_sha256"),
            ace_source=data.get("ace_source"),
            installed=data.get("installed"),
        )


# --------------------------------------------------------------------------
# places


def with_checksum(g: Grammar) -> Grammar:
    """*g* with its image's sha256 filled in (computed once, if not known).

    Example:
        >>> g = Grammar(load_profile("erg-1214"), Path("x.dat"), None, "env", "ab12", None)
        >>> with_checksum(g) is g
        True
    """
    if g.image_sha256 is not None:
        return g
    return dataclasses.replace(g, image_sha256=file_sha256(g.image))


def lit_home(env: Mapping[str, str] | None = None) -> Path:
    """The lit data directory: ``$LIT_HOME`` in *env*, else the user data dir.

    Example:
        >>> lit_home({"LIT_HOME": "/srv/lit"})
        PosixPath('/srv/lit')
    """
    if env is not None:
        value = env.get(HOME_ENV_VAR)
        if value:
            return Path(value).expanduser()
    import platformdirs

    return Path(platformdirs.user_data_dir("lit-mrs", appauthor=False))


def current_platform() -> str:
    """This machine's platform name in the profiles' vocabulary.

    One of :data:`PLATFORMS` on supported machines (e.g. ``linux-x86_64``);
    otherwise a name of the same shape that no profile will list.
    """
    system = sys.platform
    if system.startswith("linux"):
        system = "linux"
    machine = _platform.machine().lower()
    if machine in ("amd64", "x86-64", "x64"):
        machine = "x86_64"
    elif machine in ("arm64", "aarch64"):
        machine = "arm64" if system == "darwin" else "aarch64"
    return f"{system}-{machine}"


def grammar_env_var(name: str) -> str:
    """The environment variable overriding the image of grammar *name*.

    Example:
        >>> grammar_env_var("erg-2018")
        'LIT_GRAMMAR_ERG_2018'
    """
    return "LIT_GRAMMAR_" + name.upper().replace("-", "_")


def _shipped_profile_dir() -> Path | None:
    package = Path(__file__).resolve().parent
    for candidate in (package / "_data" / "grammars", package.parent / "grammars"):
        if candidate.is_dir():
            return candidate
    return None


def profile_dirs(home: str | os.PathLike[str] | None = None) -> list[Path]:
    """Directories searched for ``<name>.toml`` profiles, lowest priority first.

    The profiles shipped with lit (``lit/_data/grammars`` in a wheel, the
    repository's ``grammars/`` in an editable install), then the user's
    ``$LIT_HOME/grammars``. Missing directories are left out.
    """
    dirs = []
    shipped = _shipped_profile_dir()
    if shipped is not None:
        dirs.append(shipped)
    user = Path(home if home is not None else lit_home(None)) / "grammars"
    if user.is_dir():
        dirs.append(user)
    return dirs


# --------------------------------------------------------------------------
# profiles


def _profile_from_data(data: Mapping[str, Any], path: Path | None) -> GrammarProfile:
    where = str(path) if path is not None else "<dict>"

    def fail(msg: str) -> GrammarError:
        return GrammarError(f"{where}: {msg}")

    for key, value in data.items():
        if key not in _TOP_KEYS:
            known = ", ".join(sorted(_TOP_KEYS))
            raise fail(f"unknown key {key!r} (known keys: {known})")
        expected = _TOP_KEYS[key]
        if not isinstance(value, expected):
            raise fail(
                f"key {key!r} must be a {_type_name(expected)}, not {_type_name(type(value))}"
            )
    for key in _REQUIRED_KEYS:
        if key not in data:
            raise fail(f"missing required key {key!r}")
    name = data["name"]
    if not _NAME_RE.match(name):
        raise fail(f"key 'name': {name!r} is not a valid grammar name (letters, digits, '-', '_')")
    if path is not None and path.suffix == ".toml" and path.stem != name:
        raise fail(f"key 'name': {name!r} does not match the file name {path.name!r}")
    for key in ("erg_version", "ace_version", "description"):
        if not data[key].strip():
            raise fail(f"key {key!r} must not be empty")
    downloads = {
        table: _downloads(data.get(table, {}), table, fail) for table in ("ace", "image")
    }
    return GrammarProfile(
        name=name,
        erg_version=data["erg_version"],
        ace_version=data["ace_version"],
        description=data["description"],
        ace=downloads["ace"],
        image=downloads["image"],
        source=data.get("source"),
        semantics=copy.deepcopy(dict(data["semantics"])),
        path=path,
        default=data.get("default", False),
    )


def _downloads(table: Mapping[str, Any], key: str, fail: Any) -> dict[str, Download]:
    out: dict[str, Download] = {}
    for plat, spec in table.items():
        where = f"{key}.{plat}"
        if plat not in PLATFORMS:
            known = ", ".join(sorted(PLATFORMS))
            raise fail(f"key {where!r}: unknown platform {plat!r} (known: {known})")
        if not isinstance(spec, dict):
            raise fail(f"key {where!r} must be a table with 'url' (and 'sha256', 'member')")
        for k, v in spec.items():
            if k not in _DOWNLOAD_KEYS:
                raise fail(f"unknown key '{where}.{k}' (known keys: member, sha256, url)")
            if not isinstance(v, str):
                raise fail(f"key '{where}.{k}' must be a string")
        url = spec.get("url")
        if not url:
            raise fail(f"missing required key '{where}.url'")
        if not url.startswith(_URL_SCHEMES):
            raise fail(f"key '{where}.url': {url!r} is not an http, https or file URL")
        sha256 = spec.get("sha256", "").strip().lower() or None
        if sha256 is not None and not _SHA256_RE.match(sha256):
            raise fail(
                f"key '{where}.sha256': {spec['sha256']!r} is not a sha256 "
                "(64 hexadecimal digits; leave it empty when none is published)"
            )
        member = spec.get("member") or None
        if key == "ace" and member is None and url.endswith((".tar.gz", ".tgz", ".tar")):
            raise fail(f"missing key '{where}.member': which file in the archive is ACE?")
        out[plat] = Download(url=url, sha256=sha256, member=member)
    return out


def _type_name(t: type) -> str:
    return {str: "string", bool: "boolean", dict: "table", int: "integer", float: "number",
            list: "array"}.get(t, t.__name__)


def _read_profile(path: Path) -> GrammarProfile:
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except tomllib.TOMLDecodeError as exc:
        raise GrammarError(f"{path}: invalid TOML: {exc}") from exc
    except OSError as exc:
        raise GrammarError(f"{path}: cannot read grammar profile: {exc.strerror}") from exc
    return _profile_from_data(data, path)


def _profile_paths(home: str | os.PathLike[str] | None) -> dict[str, Path]:
    found: dict[str, Path] = {}
    for directory in profile_dirs(home):
        for path in sorted(directory.glob("*.toml")):
            if path.stem in found:
                logger.info("grammar profile %s overrides %s", path, found[path.stem])
            found[path.stem] = path
    return found


def load_profile(name: str, *, home: str | os.PathLike[str] | None = None) -> GrammarProfile:
    """Load the profile of grammar *name* (user profiles take precedence).

    Args:
        name: grammar name, e.g. ``erg-1214``
        home: the lit data directory (default: :func:`lit_home` without env)
    Raises:
        GrammarError: if there is no such profile or it is invalid
    """
    paths = _profile_paths(home)
    path = paths.get(name)
    if path is None:
        known = ", ".join(sorted(paths)) or "none"
        user = Path(home if home is not None else lit_home(None)) / "grammars"
        raise GrammarError(
            f"unknown grammar {name!r} (known: {known}); to add one, write a "
            f"profile {user / (name + '.toml')}"
        )
    return _read_profile(path)


def list_profiles(*, home: str | os.PathLike[str] | None = None) -> list[GrammarProfile]:
    """All grammar profiles (shipped and user), sorted by name.

    Raises:
        GrammarError: if any profile is invalid (the message names it)
    """
    return [_read_profile(path) for _, path in sorted(_profile_paths(home).items())]


def default_grammar(*, home: str | os.PathLike[str] | None = None) -> str:
    """The name of the default grammar (the profile with ``default = true``).

    Each directory of :func:`profile_dirs` is a level; a profile marked
    default at a higher level (the user's) wins over one at a lower level
    (shipped with lit), even if the user's profile of the shipped default
    grammar does not repeat ``default = true``.

    Raises:
        GrammarError: if no profile, or more than one at the same level, is
        marked default
    """
    chosen: list[GrammarProfile] = []
    for directory in reversed(profile_dirs(home)):
        chosen = [p for p in map(_read_profile, sorted(directory.glob("*.toml"))) if p.default]
        if chosen:
            break
    if len(chosen) == 1:
        return chosen[0].name
    if not chosen:
        raise GrammarError("no grammar profile is marked 'default = true'; pass --grammar NAME")
    files = ", ".join(str(p.path) for p in chosen)
    raise GrammarError(f"several grammar profiles are marked 'default = true': {files}")


# --------------------------------------------------------------------------
# registry


def registry_path(home: str | os.PathLike[str]) -> Path:
    """``$LIT_HOME/registry.json``."""
    return Path(home) / "registry.json"


def read_registry(home: str | os.PathLike[str]) -> dict[str, Installation]:
    """The installed grammars recorded in ``$LIT_HOME/registry.json``.

    A missing registry is empty. The file is only ever replaced atomically,
    so reading while another process writes is safe.

    Raises:
        GrammarError: if the registry is not valid JSON of the expected shape
    """
    path = registry_path(home)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise GrammarError(f"{path}: cannot read the grammar registry: {exc.strerror}") from exc
    try:
        data = json.loads(text)
        entries = data["grammars"]
        return {name: Installation.from_dict(entry) for name, entry in entries.items()}
    except (json.JSONDecodeError, KeyError, TypeError, AttributeError) as exc:
        raise GrammarError(
            f"{path}: the grammar registry is corrupt ({exc}); move it away and "
            "re-register the grammars with `lit grammar install NAME` or `lit grammar add`"
        ) from exc


@contextlib.contextmanager
def _registry_lock(home: Path) -> Iterator[None]:
    """Serialize registry writers (POSIX advisory lock; readers need none)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    home.mkdir(parents=True, exist_ok=True)
    with open(home / "registry.lock", "a+b") as f:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f.fileno(), fcntl.LOCK_UN)


def _write_registry(home: Path, entries: Mapping[str, Installation]) -> None:
    path = registry_path(home)
    data = {"version": 1, "grammars": {n: e.to_dict() for n, e in sorted(entries.items())}}
    fd, tmp = create_temp_file(home, ".registry-", ".json")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=2)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def register(entry: Installation, *, home: str | os.PathLike[str]) -> None:
    """Record (or replace) *entry* in the registry, atomically."""
    home = Path(home)
    with _registry_lock(home):
        entries = read_registry(home)
        entries[entry.name] = entry
        _write_registry(home, entries)
    logger.info("registered grammar %s (%s): %s", entry.name, entry.source, entry.image)


def unregister(name: str, *, home: str | os.PathLike[str]) -> bool:
    """Remove grammar *name* from the registry; ``False`` if it was not there."""
    home = Path(home)
    with _registry_lock(home):
        entries = read_registry(home)
        if entries.pop(name, None) is None:
            return False
        _write_registry(home, entries)
    return True


def now_iso() -> str:
    """The current UTC time, ISO 8601, seconds precision (registry timestamps)."""
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat()


# --------------------------------------------------------------------------
# resolution


def file_sha256(path: str | os.PathLike[str]) -> str:
    """The sha256 (hex) of the file at *path*, read in chunks."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _routes(name: str) -> str:
    return (
        f"re-install it with `lit grammar install {name} --force`, or re-register "
        f"the files with `lit grammar add {name} --image PATH --ace PATH`"
    )


def resolve_grammar(
    name: str,
    *,
    home: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    verify: bool = True,
) -> Grammar:
    """Find the image and ACE binary to run grammar *name* with.

    Environment overrides come first (``LIT_ACE`` for the binary,
    ``LIT_GRAMMAR_<NAME>`` for the image; their source is ``env``), then
    the registry. With *verify*, the sha256 recorded at install time is
    checked for every registry file.

    Args:
        name: grammar name (must have a profile)
        home: the lit data directory (default: :func:`lit_home` of *env*)
        env: environment mapping (the CLI passes ``os.environ``); ``None``
            means no overrides
        verify: check recorded checksums (reads the whole image)
    Raises:
        GrammarError: unknown grammar, not installed, or files missing
        ChecksumError: a registered file changed since it was recorded
    Example:
        >>> g = resolve_grammar("erg-1214", env=os.environ)  # doctest: +SKIP
        >>> g.image, g.ace, g.profile.semantics["negation"]  # doctest: +SKIP
    """
    env = env or {}
    home = Path(home) if home is not None else lit_home(env)
    profile = load_profile(name, home=home)
    entry = read_registry(home).get(name)
    var = grammar_env_var(name)

    image_sha256: str | None = None
    installed: str | None = None
    if env.get(var):
        image = Path(env[var]).expanduser()
        source = "env"
        if not image.is_file():
            raise GrammarError(f"{var}={env[var]}: no such grammar image file")
    elif entry is not None:
        image, source = entry.image, entry.source
        image_sha256, installed = entry.image_sha256, entry.installed
        if not image.is_file():
            raise GrammarError(
                f"the image of grammar {name} registered at {image} is missing; {_routes(name)}"
            )
    else:
        raise GrammarError(
            f"grammar {name} is not installed: run `lit grammar install {name}` (downloads "
            f"it; needs network access to the grammar sites), or register files you have "
            f"with `lit grammar add {name} --image PATH --ace PATH`, or set {var}=PATH"
        )

    ace: Path | None = None
    ace_version: str | None = None
    ace_sha256: str | None = None
    ace_source: str | None = None
    if env.get(ACE_ENV_VAR):
        ace = Path(env[ACE_ENV_VAR]).expanduser()
        ace_source = "env"
        if not ace.is_file():
            raise GrammarError(
                f"{ACE_ENV_VAR}={env[ACE_ENV_VAR]}: no such ACE binary; fix or unset "
                f"{ACE_ENV_VAR}, or install ACE with `lit grammar install {name}`, or register "
                f"one you have with `lit grammar add {name} --image PATH --ace PATH`"
            )
    elif entry is not None and entry.ace is not None:
        ace, ace_version, ace_sha256 = entry.ace, entry.ace_version, entry.ace_sha256
        ace_source = entry.source
        if not ace.is_file():
            raise GrammarError(
                f"the ACE binary of grammar {name} registered at {ace} is missing; "
                f"{_routes(name)}"
            )

    if verify:
        if source != "env" and image_sha256:
            _verify(name, "image", image, image_sha256, entry)
        if ace is not None and ace_source != "env" and ace_sha256:
            _verify(name, "ACE binary", ace, ace_sha256, entry)

    return Grammar(
        profile=profile,
        image=image,
        ace=ace,
        source=source,
        image_sha256=image_sha256,
        ace_version=ace_version,
        ace_sha256=ace_sha256,
        ace_source=ace_source,
        installed=installed,
    )


def _verify(name: str, what: str, path: Path, expected: str, entry: Installation | None) -> None:
    observed = file_sha256(path)
    if observed != expected:
        how = f"{entry.source} {entry.installed}" if entry is not None else "recorded"
        raise ChecksumError(
            f"the {what} of grammar {name} changed since it was registered ({how}): "
            f"{path} has sha256 {observed}, expected {expected}; {_routes(name)}"
        )


