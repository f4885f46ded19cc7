"""TRL: the reward function and the tool environment, graded on the CPU backend, and a real GRPOTrainer step."""

import math

import pytest
from tiny_models import SAXPY, build_byte_tokenizer, build_tiny_lm

trl = pytest.importorskip("trl", reason="needs the trl extra: pip install 'cudaperf-env[trl]'")

from cudaperf_env.integrations import trl as cp_trl  # noqa: E402
from cudaperf_env.turn import Grader  # noqa: E402

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module", autouse=True)
def cpu_grading():
    cp_trl.configure(grader=Grader.on("cpu"))
    yield
    cp_trl.configure()


def test_reward_function_ranks_correct_above_broken_above_no_code(saxpy):
    naive = saxpy.implementation("naive").source
    completions = [
        f"```cuda\n{naive}```",
        [{"role": "assistant", "content": f"Here:\n```cuda\n{naive.replace('256', '0')}```"}],
        "Sorry, I cannot help.",
        "ignored",
    ]
    rewards = cp_trl.reward_function(["p"] * 4, completions, task_id=[SAXPY, SAXPY, SAXPY, None])
    correct, broken, no_code, other = rewards
    assert other is None
    assert correct > 1.0 > broken > no_code, rewards


def test_reward_function_needs_the_task_id_column():
    with pytest.raises(ValueError, match="task_id"):
        cp_trl.reward_function(["p"], ["x"])


def test_make_reward_function_names_itself_for_trl_logs():
    fn = cp_trl.make_reward_function(grader=Grader.on("cpu"), name="kernel")
    assert fn.__name__ == "kernel"


def test_build_dataset_has_prompt_and_task_id():
    ds = cp_trl.build_dataset("validation", limit=3)
    assert ds.column_names == ["prompt", "task_id"] and len(ds) == 3
    assert ds[0]["prompt"][0]["role"] == "user"
    assert all(t.startswith("c2cuda/") for t in ds["task_id"])
    starter = cp_trl.build_dataset("starter", task_ids=[SAXPY], conversational=False, tools=True)
    assert "submit_kernel" in starter[0]["prompt"]


def test_tool_env_refines_over_submissions_and_owns_the_reward(saxpy):
    env = cp_trl.CudaPerfToolEnv()
    assert "submissions" in env.reset(task_id=SAXPY, prompt="ignored")
    assert env.get_reward() == pytest.approx(-0.5)  # nothing submitted yet: the format penalty
    naive = saxpy.implementation("naive").source
    first = env.submit_kernel(naive.replace("blockIdx.x * blockDim.x", "blockIdx.x"))
    assert "wrong" in first.lower() or "mismatch" in first.lower(), first
    after_wrong = env.get_reward()
    env.submit_kernel(naive)
    assert env.get_reward() > after_wrong and env.get_reward() > 1.0
    assert env.turns[-1].number == 2 and math.isclose(env.get_reward(), env.turns[-1].reward.score)
    for _ in range(2):
        env.submit_kernel("int main() {}")
    assert "No submissions left" in env.submit_kernel(naive)


def test_grpo_trainer_runs_a_step_with_our_reward_and_environment(tmp_path, monkeypatch):
    """A real GRPOTrainer (tiny random model, CPU) with reward_function and environment_factory=CudaPerfToolEnv."""
    from trl import GRPOConfig, GRPOTrainer
    from trl.chat_template_utils import qwen3_chat_template

    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    tokenizer = build_byte_tokenizer(qwen3_chat_template)
    model = build_tiny_lm(len(tokenizer))
    dataset = cp_trl.build_dataset("starter", task_ids=[SAXPY, "c2cuda/clamp_i32"], tools=True)
    args = GRPOConfig(output_dir=str(tmp_path), max_steps=1, per_device_train_batch_size=4, num_generations=2,
                      max_completion_length=16, max_tool_calling_iterations=1, use_cpu=True, report_to="none",
                      logging_steps=1, save_strategy="no", temperature=1.0, seed=0)  # fmt: skip
    trainer = GRPOTrainer(model=model, reward_funcs=cp_trl.reward_function, args=args, train_dataset=dataset,
                          processing_class=tokenizer, environment_factory=cp_trl.CudaPerfToolEnv)  # fmt: skip
    assert any(getattr(t, "__name__", "") == "submit_kernel" for t in trainer.tools)
    before = [p.detach().clone() for p in model.parameters()]
    trainer.train()
    history = trainer.state.log_history
    logged = {k for row in history for k in row}
    assert trainer.state.global_step == 1
    assert "rewards/reward_function/mean" in logged and "rewards/CudaPerfToolEnv/mean" in logged, logged
    # random 16-token completions carry no code: both reward sources pay the format penalty
    row = next(r for r in history if "rewards/reward_function/mean" in r)
    assert row["rewards/reward_function/mean"] == pytest.approx(-0.5)
    assert row["rewards/CudaPerfToolEnv/mean"] == pytest.approx(-0.5)
    assert len(before) == len(list(model.parameters()))
