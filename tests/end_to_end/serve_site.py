"""Serves a built site until the test run that started it ends:
`python -m tests.end_to_end.serve_site ROOT PID PREFIX`.

ROOT/PREFIX is the site, served at PREFIX only ("/": the host's root; "/batching/": a project page, as
GitHub Pages serves it). Any other address answers with the site's 404 page and status 404, as GitHub Pages
does. Prints the port, then serves until process PID (the test run's owner) is gone: the test process that
started it may end before the others are done with the site (a pytest-xdist worker stops when no work is left).
"""

from __future__ import annotations

import functools
import http.server
import os
import sys
import threading
import time
from pathlib import Path


class SiteHandler(http.server.SimpleHTTPRequestHandler):
    prefix = "/"

    def log_message(self, *args):
        pass

    def send_error(self, code, message=None, explain=None):
        page = Path(self.directory) / self.prefix.strip("/") / "404.html"
        if code != 404 or not page.exists():
            return super().send_error(code, message, explain)
        body = page.read_bytes()
        self.send_response(404)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def translate_path(self, path):
        if not path.startswith(self.prefix):
            return str(Path(self.directory) / "__outside_the_site__")
        return super().translate_path(path)


def main(root: str, owner: int, prefix: str) -> None:
    handler = type("Handler", (SiteHandler,), {"prefix": prefix})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(handler, directory=root))
    print(server.server_port, flush=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    while True:
        time.sleep(0.5)
        try:
            os.kill(owner, 0)
        except OSError:
            break


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3])
