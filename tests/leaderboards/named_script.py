"""The base of the scripted providers a suite names by model string alone (its roles take no ``-M`` arguments): the
model name configures the script."""

from __future__ import annotations

from inspect_ai.model import GenerateConfig, ModelAPI


class ScriptedByName(ModelAPI):
    """A scripted model whose ``configure(model_name)`` reads its behaviour from the name."""

    def __init__(
        self,
        model_name: str,
        base_url: str | None = None,
        api_key: str | None = None,
        config: GenerateConfig = GenerateConfig(),
    ) -> None:
        super().__init__(model_name, base_url, api_key, [], config)
        self.configure(model_name)

    def configure(self, model_name: str) -> None:
        raise NotImplementedError
