"""The OpenAI-compatible policy against a local stdlib HTTP server replaying canned answers."""

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

pytest.importorskip("openai", reason="the openai policy needs the openai package (pip install 'cudaperf-env[agent]')")

from agents.errors import PolicyError  # noqa: E402
from agents.policies.base import Sampling  # noqa: E402
from agents.policies.openai_policy import OpenAIPolicy, ServerConfig, backoff_delays, request_body  # noqa: E402

MESSAGES = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "write saxpy"}]


def completion(text, finish="stop"):
    return {
        "id": "c1", "object": "chat.completion", "created": 0, "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish,
                     "logprobs": {"content": [{"token": "a", "logprob": -0.5, "bytes": None, "top_logprobs": []}]}}],
        "usage": {"prompt_tokens": 11, "completion_tokens": 1, "total_tokens": 12},
    }  # fmt: skip


class Server:
    """Replays ``script``: each entry is (status, body) or ("sleep", seconds, body); records requests."""

    def __init__(self, script):
        self.script, self.requests = list(script), []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                length = int(self.headers["Content-Length"])
                server.requests.append(json.loads(self.rfile.read(length)))
                step = server.script.pop(0) if server.script else (200, completion("default"))
                if step[0] == "sleep":
                    time.sleep(step[1])
                    step = (200, step[2])
                status, body = step
                data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client timed out and left

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def serve():
    servers = []

    def start(script):
        servers.append(Server(script))
        return servers[-1]

    yield start
    for s in servers:
        s.close()


def policy(url, **kw):
    sleeps = []
    p = OpenAIPolicy(ServerConfig(base_url=url, model="m", timeout_s=kw.pop("timeout_s", 5.0), **kw), sleeps.append)
    return p, sleeps


def test_replies_are_parsed_and_each_sample_is_its_own_seeded_request(serve):
    server = serve([(200, completion("one")), (200, completion("two"))])
    p, _ = policy(server.url, concurrency=1)
    [[a, b]] = p.generate([MESSAGES], 2, Sampling(seed=7, max_tokens=64, logprobs=True))
    assert {a.text, b.text} == {"one", "two"}
    assert a.logprobs == (-0.5,) and a.prompt_tokens == 11 and a.finish_reason == "stop"
    assert sorted(r["seed"] for r in server.requests) == [7, 8]
    assert server.requests[0]["messages"] == MESSAGES and server.requests[0]["max_tokens"] == 64
    assert server.requests[0]["model"] == "m" and server.requests[0]["logprobs"] is True


def test_server_errors_and_malformed_bodies_are_retried_with_backoff(serve):
    server = serve([(500, {"error": {"message": "boom"}}), (200, "not json"), (200, {"choices": []}),
                    (429, {"error": {"message": "slow down"}}), (200, completion("finally"))])  # fmt: skip
    p, sleeps = policy(server.url, max_retries=4, backoff_s=0.5)
    [[g]] = p.generate([MESSAGES], 1, Sampling())
    assert g.text == "finally"
    assert sleeps == [0.5, 1.0, 2.0, 4.0]
    assert len(server.requests) == 5


def test_giving_up_after_max_retries_names_the_last_failure(serve):
    server = serve([(503, {"error": {"message": "down"}})] * 3)
    p, sleeps = policy(server.url, max_retries=2, backoff_s=0.1)
    with pytest.raises(PolicyError, match="3 attempts failed, last: InternalServerError"):
        p.generate([MESSAGES], 1, Sampling())
    assert sleeps == [0.1, 0.2]


def test_a_hung_request_times_out_and_is_retried(serve):
    server = serve([("sleep", 2.0, completion("late")), (200, completion("on time"))])
    p, sleeps = policy(server.url, timeout_s=0.3, max_retries=1)
    start = time.perf_counter()
    [[g]] = p.generate([MESSAGES], 1, Sampling())
    assert g.text == "on time" and len(sleeps) == 1
    assert time.perf_counter() - start < 1.9


def test_client_errors_fail_at_once_with_the_servers_message(serve):
    server = serve([(400, {"error": {"message": "max_tokens is too large"}})])
    p, sleeps = policy(server.url)
    with pytest.raises(PolicyError, match="answered 400: .*max_tokens is too large"):
        p.generate([MESSAGES], 1, Sampling())
    assert sleeps == [] and len(server.requests) == 1


def test_a_choice_without_content_is_malformed(serve):
    bad = completion("x")
    bad["choices"][0]["message"]["content"] = None
    server = serve([(200, bad)])
    p, _ = policy(server.url, max_retries=0)
    with pytest.raises(PolicyError, match="no message content"):
        p.generate([MESSAGES], 1, Sampling())


def test_request_body_and_backoff_schedule():
    body = request_body(MESSAGES, Sampling(temperature=0.0, top_k=5, stop=("```\n",)))
    assert body["temperature"] == 0.0 and body["top_p"] == 1.0 and "extra_body" not in body
    assert body["stop"] == ["```\n"]
    assert request_body(MESSAGES, Sampling(top_k=5, repetition_penalty=1.2))["extra_body"] == {
        "top_k": 5, "repetition_penalty": 1.2}  # fmt: skip
    assert backoff_delays(ServerConfig("http://x", "m", max_retries=5, backoff_s=1, max_backoff_s=5)) == [1, 2, 4, 5, 5]
    with pytest.raises(ValueError, match="base_url must start with http"):
        ServerConfig("localhost:8000", "m")


def test_each_reply_is_told_as_its_request_returns(serve):
    server = serve([("sleep", 1.0, completion("slow")), (200, completion("fast"))])
    p, _ = policy(server.url, concurrency=2)
    told = []
    [[slow, fast]] = p.generate([MESSAGES], 2, Sampling(), on_reply=lambda i, text: told.append((i, text)))
    assert p.streams_replies and {slow.text, fast.text} == {"slow", "fast"}
    by_index = [slow.text, fast.text]
    assert [text for _, text in told] == ["fast", "slow"]  # the quick answer first, while the slow one waited
    assert all(by_index[i] == text for i, text in told)
