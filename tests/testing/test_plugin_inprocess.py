"""The in-process server on its own: it keeps the options it is given, and its log holds its
own records only, when several run in one process."""

from __future__ import annotations

import logging
from pathlib import Path

from cryptography import x509

from kubelite.server.serve import ServeOptions
from kubelite.testing.servers import InProcessServer


def test_options_are_kept_and_logs_are_per_server(tmp_path: Path) -> None:
    first = InProcessServer.start(tmp_path / "a", ServeOptions(tls_sans=("example.test",)))
    second = InProcessServer.start(tmp_path / "b")
    try:
        cert = x509.load_pem_x509_certificate((tmp_path / "a" / "server.crt").read_bytes())
        names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        assert "example.test" in {str(n.value) for n in names}
        logging.getLogger("kubelite.test").warning("from the test's thread")
    finally:
        first.stop()
        second.stop()
    for log in (first.log(), second.log()):
        assert "from the test's thread" not in log
