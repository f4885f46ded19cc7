"""Adapters for the libraries people train and evaluate with; each module imports its library lazily.

Every adapter grades through :mod:`cudaperf_env.turn` (one reward, one feedback text):

- ``trl``: ``reward_function``, ``CudaPerfToolEnv`` (``GRPOTrainer(environment_factory=...)``) and
  ``build_dataset``.
- ``verl``: ``compute_score`` and a multi-turn ``BaseTool``.
- ``verifiers``: ``load_environment``.
- ``pick``: the discrete ``CudaPerf-C2CUDA-Pick-v0`` environment (SB3, RLlib); ``sb3`` trains and scores it.
- ``pettingzoo``: a coder and a reviewer taking turns (``env()``).
- ``ray``: :class:`~cudaperf_env.integrations.ray.EvaluatorPool`, evaluation spread over actors.
- ``logging``: flat ``info`` for loggers (:class:`~cudaperf_env.integrations.logging.FlattenInfo`) and
  TensorBoard scalars of every reward term.

Shared pieces (task lookup, completion text, grading a mixed batch by task) are in
:mod:`cudaperf_env.integrations.grading`.
"""
