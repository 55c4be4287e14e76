"""A tiny Hugging Face hub on 127.0.0.1 for tests: serves model folders in the hub's API shape.

Enough of the API for ``HfApi.list_repo_tree``, ``repo_info`` and ``snapshot_download`` / ``hf_hub_download``
(``HF_ENDPOINT=http://127.0.0.1:PORT``): repository info and tree listings as JSON, file metadata on HEAD
(``X-Repo-Commit``, ``ETag``, ``Content-Length``) and file bodies on GET. Every request is recorded, so a test
can prove what was fetched (and that it was fetched at all).
"""

from __future__ import annotations

import hashlib
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlparse


class FakeHub:
    def __init__(self, repos: dict[str, Path]) -> None:
        self.repos = {rid: Path(p) for rid, p in repos.items()}
        self.requests: list[tuple[str, str]] = []  # (method, path)
        self.sha = {rid: hashlib.sha1(rid.encode()).hexdigest() for rid in repos}
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def files(self, repo: str) -> dict[str, bytes]:
        root = self.repos[repo]
        return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}

    def fetched(self) -> list[str]:
        """Paths of the files whose bodies were sent (GET .../resolve/...)."""
        return [
            p.split("/resolve/", 1)[1].split("/", 1)[1] for m, p in self.requests if m == "GET" and "/resolve/" in p
        ]

    def __enter__(self) -> FakeHub:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _handler(self):
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def _json(self, obj, status: int = 200) -> None:
                body = json.dumps(obj).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _route(self, head: bool) -> None:
                path = unquote(urlparse(self.path).path)
                hub.requests.append(("HEAD" if head else "GET", path))
                if path.startswith("/api/models/"):
                    return self._api(path[len("/api/models/") :])
                for repo in hub.repos:
                    prefix = f"/{repo}/resolve/"
                    if path.startswith(prefix):
                        _, _, name = path[len(prefix) :].partition("/")
                        return self._file(repo, name, head)
                self._json({"error": "Repository not found"}, 404)

            def _api(self, rest: str) -> None:
                for repo in hub.repos:
                    if rest.startswith(repo + "/") or rest == repo:
                        tail = rest[len(repo) :].strip("/")
                        files = hub.files(repo)
                        if tail.startswith("tree/"):
                            return self._json(
                                [
                                    {"type": "file", "path": n, "size": len(b), "oid": hashlib.sha1(b).hexdigest()}
                                    for n, b in files.items()
                                ]
                            )
                        return self._json(
                            {
                                "id": repo,
                                "modelId": repo,
                                "sha": hub.sha[repo],
                                "private": False,
                                "siblings": [{"rfilename": n} for n in files],
                            }
                        )
                self._json({"error": "Repository not found"}, 404)

            def _file(self, repo: str, name: str, head: bool) -> None:
                data = hub.files(repo).get(name)
                if data is None:
                    return self._json({"error": "Entry not found"}, 404)
                self.send_response(200)
                self.send_header("X-Repo-Commit", hub.sha[repo])
                self.send_header("ETag", f'"{hashlib.sha1(data).hexdigest()}"')
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if not head:
                    self.wfile.write(data)

            def do_GET(self):
                self._route(head=False)

            def do_HEAD(self):
                self._route(head=True)

        return Handler
