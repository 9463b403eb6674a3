"""Retries on 503: against a real local HTTP server that answers 503 (with
Retry-After) a given number of times, then as the API does."""

from __future__ import annotations

import json
import threading
import time
import unittest
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import List, Tuple

import agentmem


class Flaky:
    """A local HTTP server whose first `fail` answers are 503 with the
    given Retry-After, and which then answers 201 with an append result.
    It records each request's method, path and headers."""

    def __init__(self, fail: int, retry_after: str = "0") -> None:
        self.fail = fail
        self.retry_after = retry_after
        self.requests: List[Tuple[str, str, dict]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                outer.requests.append((self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body))
                if len(outer.requests) <= outer.fail:
                    data = json.dumps({"error": {"code": "unavailable", "message": "the store is unavailable; retry later"}}).encode()
                    self.send_response(503)
                    if outer.retry_after:
                        self.send_header("Retry-After", outer.retry_after)
                else:
                    data = json.dumps({"seqs": [1], "last_seq": 1, "items": [], "item": {"role": "user", "content": "x"}}).encode()
                    self.send_response(201 if self.command == "POST" else 200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_DELETE = _answer

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = "http://127.0.0.1:%d" % self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


class RetryTest(unittest.TestCase):
    def flaky(self, fail: int, retry_after: str = "0") -> Flaky:
        f = Flaky(fail, retry_after)
        self.addCleanup(f.close)
        return f

    def test_append_retried_with_the_same_key(self) -> None:
        f = self.flaky(2)
        c = agentmem.Client(f.url, max_retries=3)
        r = c.append_messages("s", {"role": "user", "content": "hi"})
        self.assertEqual(r.last_seq, 1)
        self.assertEqual(len(f.requests), 3)
        keys = {req[2]["idempotency-key"] for req in f.requests}
        self.assertEqual(len(keys), 1, "every attempt carries the same Idempotency-Key")
        self.assertEqual({req[3] for req in f.requests}, {b'{"role":"user","content":"hi"}'})

    def test_reads_retried_and_bounded(self) -> None:
        f = self.flaky(10)
        c = agentmem.Client(f.url, max_retries=2)
        with self.assertRaises(agentmem.UnavailableError) as cm:
            c.get_items("s")
        self.assertEqual(len(f.requests), 3)  # one try and two retries
        self.assertEqual((cm.exception.status, cm.exception.retry_after), (503, 0.0))

        f = self.flaky(1)
        self.assertEqual(agentmem.Client(f.url).get_items("s"), [])
        self.assertEqual(len(f.requests), 2)

    def test_unsafe_writes_not_retried(self) -> None:
        # A pop without If-Match, or a create, could happen twice.
        f = self.flaky(2)
        c = agentmem.Client(f.url)
        with self.assertRaises(agentmem.UnavailableError):
            c.pop_item("s")
        with self.assertRaises(agentmem.UnavailableError):
            c.create_session("s")
        self.assertEqual(len(f.requests), 2)
        # With If-Match it is safe, and retried.
        f = self.flaky(1)
        self.assertEqual(agentmem.Client(f.url).pop_item("s", if_match=3), {"role": "user", "content": "x"})
        self.assertEqual(len(f.requests), 2)
        self.assertEqual(f.requests[1][2]["if-match"], '"3"')

    def test_retry_after_is_honoured_and_capped(self) -> None:
        f = self.flaky(1, retry_after="1")
        start = time.monotonic()
        agentmem.Client(f.url).get_items("s")
        self.assertGreaterEqual(time.monotonic() - start, 0.9)

        # A date, and a wait longer than max_retry_wait.
        f = self.flaky(1, retry_after=formatdate(time.time() + 3600, usegmt=True))
        start = time.monotonic()
        agentmem.Client(f.url, max_retry_wait=0.2).get_items("s")
        self.assertLess(time.monotonic() - start, 5)
        self.assertEqual(len(f.requests), 2)

    def test_no_retries(self) -> None:
        f = self.flaky(1)
        with self.assertRaises(agentmem.UnavailableError):
            agentmem.Client(f.url, max_retries=0).get_items("s")
        self.assertEqual(len(f.requests), 1)


class AsyncRetryTest(unittest.IsolatedAsyncioTestCase):
    async def test_async_client_retries(self) -> None:
        f = Flaky(1)
        self.addCleanup(f.close)
        c = agentmem.AsyncClient(f.url)
        self.assertEqual((await c.add_items("s", [{"role": "user", "content": "x"}])).seqs, [1])
        self.assertEqual(len(f.requests), 2)


if __name__ == "__main__":
    unittest.main()
