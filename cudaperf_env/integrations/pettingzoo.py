"""A PettingZoo AEC game of two agents on one task: a ``coder`` who submits, a ``reviewer`` who advises.

::

    from cudaperf_env.integrations.pettingzoo import env
    game = env(backend="cpu", max_rounds=3)
    game.reset(seed=0)
    for agent in game.agent_iter():
        _, reward, terminated, truncated, info = game.last()
        game.step(None if terminated or truncated else policy[agent](game.observe_text(agent)))

Turn order: coder, reviewer, coder, reviewer, ... The coder reads the task (then
the feedback on its last submission and the reviewer's advice) and replies with
CUDA source; the submission is graded by :mod:`cudaperf_env.turn` exactly as in
``CudaPerf-C2CUDA-v1``. The reviewer reads the submitted code and its feedback and
replies with advice in plain text, shown to the coder on its next turn.

Observations are what PettingZoo's checkers require (numpy arrays of a declared
dtype): the text as ASCII codes, zero-padded to ``MAX_OBSERVATION_CHARS`` bytes
(:func:`decode` turns one back into text); :meth:`CudaPerfReviewEnv.observe_text`
gives the text directly, for LLM agents. Actions are text.

``infos`` hold the graded turn's ``info`` (``status``, ``reward/<term>`` ...) with
None for values not measured (NaN) and without the wall time, so a seeded episode
replays to equal infos (PettingZoo's ``seed_test``).

Rewards: the coder earns each submission's reward (potential-based: an episode
returns its last score); the reviewer earns the reward of the submission that
follows its advice (the change of score the advice led to). The game ends for both
when the coder's submission ends the episode (see ``CudaPerfEnv``'s Episode End) or
after ``max_rounds`` submissions.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv
from pettingzoo.utils import AgentSelector

from cudaperf_env.env import MAX_OBSERVATION_CHARS, CudaPerfEnv
from cudaperf_env.text import charset, sanitize, truncate

__all__ = ["CudaPerfReviewEnv", "decode", "encode", "env"]

CODER, REVIEWER = "coder", "reviewer"
MAX_ADVICE_CHARS = 4096


def encode(text: str) -> np.ndarray:
    """Printable-ASCII text as the observation array (longer text is cut)."""
    data = np.frombuffer(text.encode("ascii", "replace")[:MAX_OBSERVATION_CHARS], dtype=np.uint8)
    out = np.zeros(MAX_OBSERVATION_CHARS, dtype=np.uint8)
    out[: len(data)] = np.minimum(data, 127)
    return out


def decode(observation: np.ndarray) -> str:
    """The text of an observation array."""
    data = np.asarray(observation, dtype=np.uint8)
    end = np.flatnonzero(data == 0)
    return data[: end[0] if end.size else len(data)].tobytes().decode("ascii", "replace")


def _replayable(info: dict[str, Any]) -> dict[str, Any]:
    """The turn's ``info`` without its wall time and with None for unmeasured (NaN) values: equal across replays."""
    return {k: None if isinstance(v, float) and math.isnan(v) else v for k, v in info.items() if k != "eval_seconds"}


def env(**kwargs: Any) -> CudaPerfReviewEnv:
    """The coder-and-reviewer game (keyword arguments as :class:`CudaPerfReviewEnv`)."""
    return CudaPerfReviewEnv(**kwargs)


class CudaPerfReviewEnv(AECEnv):  # type: ignore[misc]  # pettingzoo is untyped
    """Coder and reviewer take turns on one task; the coder's submissions are graded.

    Args:
        max_rounds: Coder submissions per episode.
        render_mode: ``None`` or ``"ansi"``.
        **env_kwargs: Passed to :class:`~cudaperf_env.env.CudaPerfEnv` (``backend``, ``split``,
            ``task_ids``, ``reward``, ``stop_on_correct`` ...).
    """

    metadata = {"name": "cudaperf_review_v0", "render_modes": ["ansi"], "is_parallelizable": False}

    def __init__(self, max_rounds: int = 3, render_mode: str | None = None, **env_kwargs: Any) -> None:
        super().__init__()
        self.game = CudaPerfEnv(max_turns=max_rounds, **env_kwargs)
        self.render_mode = render_mode
        self.possible_agents = [CODER, REVIEWER]
        text = charset()
        self._observation_spaces = {
            agent: spaces.Box(0, 127, shape=(MAX_OBSERVATION_CHARS,), dtype=np.uint8) for agent in (CODER, REVIEWER)
        }
        self._action_spaces = {CODER: self.game.action_space, REVIEWER: spaces.Text(MAX_ADVICE_CHARS, charset=text)}
        self._selector = AgentSelector(self.possible_agents)
        self._observations: dict[str, str] = {}
        self._advice = ""
        self._feedback = ""
        self._last_text = ""

    def observation_space(self, agent: str) -> spaces.Space:
        """The agent's observation space (the same object every call)."""
        return self._observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space:
        """The agent's action space (the same object every call)."""
        return self._action_spaces[agent]

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        """Start an episode on a task (``options={"task_id": ...}`` pins it, as in ``CudaPerfEnv``)."""
        prompt, info = self.game.reset(seed=seed, options=options)
        self.agents = list(self.possible_agents)
        self.rewards = dict.fromkeys(self.agents, 0.0)
        self._cumulative_rewards = dict.fromkeys(self.agents, 0.0)
        self.terminations = dict.fromkeys(self.agents, False)
        self.truncations = dict.fromkeys(self.agents, False)
        self.infos = {agent: dict(info) for agent in self.agents}
        self._observations = {CODER: prompt, REVIEWER: ""}
        self._advice = self._feedback = ""
        self._selector.reinit(self.agents)
        self.agent_selection = self._selector.reset()
        self._last_text = prompt

    def observe(self, agent: str) -> np.ndarray:
        """What ``agent`` reads now, as an array (:func:`decode`); empty for the reviewer before a submission."""
        return encode(self.observe_text(agent))

    def observe_text(self, agent: str) -> str:
        """What ``agent`` reads now, as text."""
        return self._observations.get(agent, "")

    def step(self, action: Any) -> None:
        """The selected agent acts: the coder submits (graded), the reviewer advises. Never raises on bad text."""
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        self._cumulative_rewards[agent] = 0.0  # last() has handed this agent its rewards so far
        self._clear_rewards()
        text = action if isinstance(action, str) else ""
        if agent == CODER:
            self._coder_step(text)
        else:
            self._advice = truncate(sanitize(text), MAX_ADVICE_CHARS)
            self._observations[CODER] = self._coder_view()
            self._observations[REVIEWER] = ""
            self._last_text = f"Reviewer's advice:\n{self._advice}"
        self.agent_selection = self._selector.next()
        self._accumulate_rewards()

    def _coder_step(self, text: str) -> None:
        feedback, reward, terminated, truncated, info = self.game.step(text)
        self.rewards[CODER] = float(reward)
        if self.game.turn > 1:
            self.rewards[REVIEWER] = float(reward)  # credit for the advice this submission followed
        self.infos = {agent: _replayable(info) for agent in self.agents}
        code = truncate(sanitize(text), MAX_OBSERVATION_CHARS // 2)
        self._observations[REVIEWER] = truncate(
            f"The coder submitted:\n{code}\n\n{feedback}\n\nWrite advice for the coder's next submission.",
            MAX_OBSERVATION_CHARS - 64,
        )
        self._observations[CODER] = self._feedback = feedback
        self._last_text = feedback
        if terminated or truncated:
            self.terminations = dict.fromkeys(self.agents, bool(terminated))
            self.truncations = dict.fromkeys(self.agents, bool(truncated and not terminated))

    def _coder_view(self) -> str:
        view = f"{self._feedback}\n\nReviewer's advice:\n{self._advice or '(none)'}"
        return truncate(sanitize(view), MAX_OBSERVATION_CHARS - 64)

    def render(self) -> str | None:
        """The last feedback or advice (``render_mode="ansi"``)."""
        return self._last_text if self.render_mode == "ansi" else None

    def close(self) -> None:
        """Close the underlying environment."""
        self.game.close()
