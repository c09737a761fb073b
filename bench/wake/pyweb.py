#!/usr/bin/env python3
"""A Python web service for the wake benchmark: Debian's python3 and its standard library
only (http.server), holding ITEMS values of SIZE bytes in its heap, as an in-memory catalog
service would. GET /item/I answers value I (servers.value_of: a pattern that names its
item, so that the client checks every byte).

    pyweb.py PORT ITEMS SIZE
"""
import http.server
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "tests", "e2e"))
from servers import value_of  # noqa: E402


def main():
    port, items, size = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    # Each value its own object, scattered over the heap as a real service's would be.
    store = [value_of(i, size) for i in range(items)]

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self):
            parts = self.path.split("/")
            try:
                body = store[int(parts[2])] if len(parts) == 3 and parts[1] == "item" else None
            except (ValueError, IndexError):
                body = None
            if body is None:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()


if __name__ == "__main__":
    main()
