"""pytest-lsp suite: `tether serve` driven by a real LSP client (pygls) presenting the
recorded client capabilities of VS Code and Neovim. Spec warnings are errors (pytest.ini).

Environment: TETHER_BIN (default <repo>/target/debug/tether).
"""

import os
import pathlib
import shutil
import sys
import tempfile

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

REPO = pathlib.Path(__file__).resolve().parents[2]
TETHER_BIN = os.environ.get("TETHER_BIN", str(REPO / "target" / "debug" / "tether"))

if not os.access(TETHER_BIN, os.X_OK):
    sys.exit(f"tether binary missing at {TETHER_BIN}: run `cargo build -p tether` first")

PROFILES = {
    "vscode": "visual-studio-code",
    "neovim": "neovim",
}


def init_options(root: pathlib.Path) -> dict:
    return {
        "storage": {"dir": str(root / "cache")},
        "agents": {
            "scripted": {
                "command": TETHER_BIN,
                "args": ["scripted-agent", "--state-dir", str(root / "agent")],
                "protocol": "acp",
            }
        },
        "defaultAgent": "scripted",
        "resume": {"maxAttempts": 3, "baseDelayMs": 100, "maxDelayMs": 400, "jitter": "none"},
    }


@pytest_lsp.fixture(
    params=list(PROFILES),
    config=ClientServerConfig(
        server_command=[TETHER_BIN, "serve", "--stdio", "--remote=off", "--log-file", os.path.join(tempfile.gettempdir(), "tether-pytest-logs", "tether.log")],
    ),
)
async def client(request, lsp_client: LanguageClient):
    """A client per capability profile, against a fresh cache and agent state."""
    root = pathlib.Path(tempfile.mkdtemp(prefix="tether-pytest-"))
    (root / "workspace").mkdir()
    lsp_client.tether_root = root
    lsp_client.workspace = str(root / "workspace")
    lsp_client.show_message_requests = []
    lsp_client.answer = "Start New Session"
    lsp_client.tether_notes = []

    @lsp_client.feature(types.WINDOW_SHOW_MESSAGE_REQUEST)
    def on_show_message_request(params: types.ShowMessageRequestParams):
        lsp_client.show_message_requests.append(params)
        for action in params.actions or []:
            if action.title == lsp_client.answer:
                return action
        return None

    for method in ("session/expired", "session/restored", "session/update", "session/status",
                   "session/banner", "telemetry/event"):
        def make(m):
            def note(params):
                lsp_client.tether_notes.append((m, params))
            return note
        lsp_client.feature(method)(make(method))

    capabilities = client_capabilities(PROFILES[request.param])
    params = types.InitializeParams(
        capabilities=capabilities,
        initialization_options=init_options(root),
        root_uri=pathlib.Path(lsp_client.workspace).as_uri(),
    )
    await lsp_client.initialize_session(params)
    yield
    await lsp_client.shutdown_session()
    shutil.rmtree(root, ignore_errors=True)
