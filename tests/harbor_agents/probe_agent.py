"""A Harbor agent that runs one taskloom tamper probe instead of doing the task.

Loaded by the `harbor` of tests/harbor_env.py (`-a probe_agent:ProbeAgent --ak
script=PATH`): it uploads the probe script and runs it as Harbor's oracle runs solve.sh,
so a test can see what reward Harbor itself gives a probe.
"""

from __future__ import annotations

from harbor.agents.base import BaseAgent
from harbor.environments.base import BaseEnvironment
from harbor.models.agent.context import AgentContext


class ProbeAgent(BaseAgent):
    """Runs the probe script given as `script`; does nothing of the task."""

    def __init__(self, *args, script: str = "", **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.script = script

    @staticmethod
    def name() -> str:
        return "taskloom-probe"

    def version(self) -> str:
        return "1"

    async def setup(self, environment: BaseEnvironment) -> None:
        pass

    async def run(self, instruction: str, environment: BaseEnvironment,
                  context: AgentContext) -> None:
        await environment.upload_file(source_path=self.script,
                                      target_path="/tmp/taskloom-probe.sh")
        await environment.exec(command="bash /tmp/taskloom-probe.sh", user="root")
