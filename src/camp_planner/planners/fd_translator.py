"""A resident Fast Downward translator: FD's own translator, imported once in a helper process.

The driver starts a fresh Python interpreter for the translator on every call, and imports
cost about 0.1 s; for the tiny ground tasks CAMPs produce that is most of the planning time,
which the objective charges. This helper process imports ``fast_downward.translate`` once
(through its library entry point, ``options.set_options`` then ``main``) and translates one
task per request: a JSON line ``{"id", "domain", "problem", "sas"}`` on stdin (and
optionally ``"options"``, more translator arguments), answered by
``{"id", "code", "log"}`` on stdout, with the request's id (so that a caller can tell the
reply to its request from a late reply to an earlier one) and the exit code (0, or the
translator's own codes such as 10 for a task proven unsolvable). Run as
``python -m camp_planner.planners.fd_translator FD_BIN_DIR``.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys


def serve(bin_dir: str) -> None:
    sys.path.insert(0, bin_dir)
    from fast_downward.translate import main as translate_main  # type: ignore[import-untyped]
    from fast_downward.translate import options

    # The replies go to a private copy of the stdout pipe, and file descriptor 1 now points at
    # stderr: nothing else the translator or a library writes can land between two replies.
    out = os.fdopen(os.dup(sys.stdout.fileno()), "w", encoding="utf-8")
    sys.stdout.flush()
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    for line in sys.stdin:
        request = json.loads(line)
        code = 0
        sink = io.StringIO()
        try:
            with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
                options.set_options(
                    [
                        request["domain"],
                        request["problem"],
                        "--sas-file",
                        request["sas"],
                        *request.get("options", []),
                    ]
                )
                translate_main.main()
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        except Exception as exc:  # any translator failure is reported, never fatal
            code = 30
            sink.write(f"{type(exc).__name__}: {exc}")
        reply = {
            "id": request.get("id"),
            "code": code,
            "log": sink.getvalue()[-2000:] if code else "",
        }
        out.write(json.dumps(reply) + "\n")
        out.flush()


if __name__ == "__main__":
    serve(sys.argv[1])
