"""Check a built lit image from inside it, offline: run at the end of docker/Dockerfile.

For every grammar registered in ``$LIT_HOME`` it resolves the grammar the way
lit does (verifying the sha256 recorded by ``lit grammar install``/``add``),
runs its ACE binary and parses a sentence. With ``--model NAME`` it also loads
that model with lit's reranker from local files only and scores a sentence.
It exits 1 with one line per problem on stderr.

Usage::

    python docker/check_image.py [--model gpt2] [--sentence "Dogs bark."]
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping

from delphin.exceptions import PyDelphinException

from lit.ace import probe_version as ace_version_of
from lit.errors import LitError
from lit.grammar import lit_home, read_registry, resolve_grammar


def check_grammar(name: str, sentence: str, env: Mapping[str, str]) -> str:
    """Resolve, verify and run grammar *name*; return a one-line report.

    Raises:
        LitError: the grammar cannot be resolved, a checksum does not match,
            or ``ACE -V`` fails
        PyDelphinException: ACE fails while parsing
        RuntimeError: ACE ran but found no parse for *sentence*
    """
    from delphin import ace

    g = resolve_grammar(name, env=env, verify=True)
    if g.ace is None:
        raise LitError(f"grammar {name} has no registered ACE binary (register it with --ace)")
    version = ace_version_of(g.ace)
    response = ace.parse(str(g.image), sentence, executable=str(g.ace), cmdargs=["-n", "1"])
    if not response.results():
        raise RuntimeError(f"grammar {name}: ACE {version} found no parse for {sentence!r}")
    return f"{name}: image {g.image} verified; ACE {version} parses {sentence!r}"


def check_model(name: str) -> str:
    """Load model *name* with lit's reranker, from local files only, and score a sentence.

    Raises:
        RerankError: the model cannot be loaded (e.g. not in the local cache)
    """
    from lit.rerank import Reranker

    with Reranker(name, device="cpu", local_files_only=True) as reranker:
        (score,) = reranker.score(["Dogs bark."])
    where = os.environ.get("HF_HOME", "the default cache")
    return f"model {name}: loaded from {where}; scores 'Dogs bark.' {score:.3f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="", help="reranking model to load (empty: none)")
    parser.add_argument("--sentence", default="Dogs bark.", help="sentence each grammar parses")
    args = parser.parse_args(argv)

    env = dict(os.environ)
    home = lit_home(env)
    names = sorted(read_registry(home))
    problems: list[str] = []
    if not names:
        problems.append(
            f"no grammar is registered in {home}: build with --build-arg GRAMMARS=NAME... "
            "or --build-context local-grammars=DIR"
        )
    for name in names:
        try:
            print(check_grammar(name, args.sentence, env))
        except (LitError, PyDelphinException, RuntimeError, OSError) as exc:
            problems.append(str(exc))
    if args.model:
        try:
            print(check_model(args.model))
        except LitError as exc:
            problems.append(str(exc))
    for problem in problems:
        print(f"check_image: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
