"""moto's AWS emulator (DynamoDB, DynamoDB Streams, SQS) with every DynamoDB request serialised.

Why: moto's DynamoDB backend is not thread-safe. Under stock `moto_server`, concurrent
conditional updates sometimes both win and overlapping transactions oversell or leave partial
writes (measured: see DESIGN.md, "Local stack"). Real DynamoDB serialises conflicting writes;
one lock around every request whose X-Amz-Target starts with "DynamoDB" gives the emulator the
same guarantee, so the race tests check Lineup's conditions and not moto's thread safety.

Usage: python scripts/moto_server.py --port 5005
"""

import argparse
import threading

from moto.server import DomainDispatcherApplication, create_backend_app
from werkzeug import serving

DYNAMODB_LOCK = threading.Lock()


class SerialisedDynamoDB:
    """WSGI middleware: runs DynamoDB (and DynamoDB Streams) requests one at a time."""

    def __init__(self, app):
        self.app = app

    def __call__(self, environ, start_response):
        if not environ.get("HTTP_X_AMZ_TARGET", "").startswith("DynamoDB"):
            return self.app(environ, start_response)
        with DYNAMODB_LOCK:
            # Produce the whole body inside the lock: moto may work lazily while iterating.
            result = self.app(environ, start_response)
            try:
                body = b"".join(result)
            finally:
                if hasattr(result, "close"):
                    result.close()
        return [body]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=5005)
    args = parser.parse_args()
    app = SerialisedDynamoDB(DomainDispatcherApplication(create_backend_app))
    # Race tests open hundreds of connections at once; werkzeug's default listen backlog (128)
    # overflows and clients see connect timeouts. The kernel caps this at net.core.somaxconn.
    serving.ThreadedWSGIServer.request_queue_size = 4096
    serving.run_simple(args.host, args.port, app, threaded=True, use_reloader=False)


if __name__ == "__main__":
    main()
