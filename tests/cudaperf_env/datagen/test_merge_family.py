"""The merge family on the CPU backend: an implementation passes and a broken copy fails."""


from cudaperf_env.backends.cpu.backend import CpuBackend
from cudaperf_env.datagen.build import generate
from cudaperf_env.evaluate import Evaluator
from cudaperf_env.tasks import parse_task


def test_merge_implementation_passes_and_a_broken_one_fails_on_the_cpu_backend():
    data = generate("merge_sorted", 0, 1)
    data["configs"], data["hidden_configs"] = data["configs"][:1], [{"M": 5, "N": 3}]  # small: cheap
    task = parse_task(data, data["id"])
    evaluator = Evaluator(CpuBackend(threads=1))
    source = next(i.source for i in task.implementations if i.name == "merge_path")
    assert evaluator.evaluate(task, source, seed=1).status == "ok"
    broken = source.replace("int i = path_split(a, m, b, n, d)", "int i = path_split(a, m, b, n, d + 1)")
    assert broken != source
    assert evaluator.evaluate(task, broken, seed=1).status == "wrong_answer"
