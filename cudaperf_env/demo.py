"""``cudaperf demo``: a scripted agent plays one episode; feedback and rewards in a table."""

from __future__ import annotations

import math

from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table

DEMO_TASK = "c2cuda/saxpy_f32"
# kind -> (env id, task) of the demo episode
DEMO_EPISODES = {"c2cuda": ("CudaPerf-C2CUDA-v1", DEMO_TASK),
                 "torch2cuda": ("CudaPerf-Torch2CUDA-v0", "torch2cuda/linear_mish_relu")}  # fmt: skip

# A plausible first attempt with a classic bug: the grid covers only n/256 blocks
# (floor division), so the tail of the array is never written.
WRONG_SUBMISSION = """I'll launch one thread per element.
```cuda
__global__ void saxpy_kernel(int n, float a, const float* x, float* y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
extern "C" void saxpy(int n, float a, const float* x, float* y) {
    saxpy_kernel<<<n / 256, 256>>>(n, a, x, y);
}
```"""


def scripted_replies(task) -> list[tuple[str, str]]:
    """(label, reply) for each turn: a wrong kernel, the naive one, the best known one."""
    naive = task.implementation(task.baseline)
    best = task.implementations[-1]
    wrong = WRONG_SUBMISSION
    if task.kind == "torch2cuda":  # the same bug: floor division leaves the last columns unwritten
        wrong = "```cuda\n" + naive.source.replace("(out_features + 15) / 16", "out_features / 16") + "```"
    return [
        ("wrong grid", wrong),
        (naive.name, f"```cuda\n{naive.source}```"),
        (best.name, f"```cuda\n{best.source}```"),
    ]


def run_demo(backend: str = "auto", console: Console | None = None, kind: str = "c2cuda") -> list[dict]:
    """Play the scripted episode of ``kind`` (:data:`DEMO_EPISODES`); print and return per-turn info dicts."""
    import gymnasium as gym

    import cudaperf_env  # noqa: F401  (registers the ids)

    console = console or Console()
    replies_count = 3
    env_id, task_id = DEMO_EPISODES[kind]
    env = gym.make(env_id, backend=backend, max_turns=replies_count, task_ids=[task_id], stop_on_correct=False)
    prompt, _ = env.reset(seed=0)
    task = env.unwrapped.task  # type: ignore[attr-defined]
    console.print(Panel(escape(prompt), title=escape(f"prompt ({task.id})"), expand=False))
    rows = []
    for label, reply in scripted_replies(task):
        with console.status(f"evaluating: {label}"):
            obs, reward, terminated, truncated, info = env.step(reply)
        feedback = escape(obs.split("\n\nTask ")[0])  # task text holds [i]: never rich markup
        console.print(Panel(feedback, title=escape(f"turn {info['turn']}: {label}"), expand=False))
        rows.append({"label": label, "reward": reward, "terminated": terminated, "truncated": truncated, **info})
        if terminated or truncated:
            break
    console.print(_table(rows))
    if all(math.isnan(r["speedup"]) for r in rows):
        console.print("Speedup is measured on a GPU backend only; the cpu backend checks correctness.")
        caveat = ranker_caveat(rows)
        if caveat:
            console.print(caveat)
    env.close()
    return rows


def ranker_caveat(rows: list[dict]) -> str:
    """A note when the ranker rated a later correct submission below an earlier one (pure): without timings
    its estimate is the only speed signal, and it can misjudge kernels unlike its training data."""
    correct = [r for r in rows if r["correct"] and "reward/ranker" in r]
    for i, later in enumerate(correct):
        for earlier in correct[:i]:
            if later["reward/ranker"] < earlier["reward/ranker"]:
                return (f"Without timings the ranker's estimate stands in for speed: it rated {later['label']} below "
                        f"{earlier['label']}. It was trained on generated kernels and can misjudge hand-written "
                        "ones (docs/structural-analysis.md, \"Hand-written kernels\"); a GPU backend times them.")
    return ""


def _table(rows: list[dict]) -> Table:
    """One column per turn, one row per quantity: fits a narrow terminal."""
    table = Table(title="episode summary")
    table.add_column("")
    for r in rows:
        table.add_column(f"turn {r['turn']}", justify="right", overflow="fold")
    terms = [k for k in rows[0] if k.startswith("reward/")] if rows else []
    table.add_row("submission", *[r["label"] for r in rows])
    table.add_row("status", *[r["status"] for r in rows])
    table.add_row("correct", *["yes" if r["correct"] else "no" for r in rows])
    for term in terms:
        table.add_row(term, *[f"{r[term]:+.2f}" for r in rows])
    table.add_row("reward", *[f"{r['reward']:+.2f}" for r in rows], style="bold")
    table.add_row("score reached", *[f"{r['score']:.2f}" for r in rows])
    table.add_row("eval seconds", *[f"{r['eval_seconds']:.2f}" for r in rows])
    return table
