"""Every model the shared recordings name has a list price, and the figures agree with genai-prices'
published data: an unknown price makes the replay lab's cost and billed cost "unknown", so a model
missing from the table shows up as a gap in every report on a real session."""

from __future__ import annotations

from pathlib import Path

import pytest

from nova.evaluation.replay import call_model
from nova.model import Usage, usage_of
from nova.providers.pricing import ModelInfo, cost_usd, model_info
from nova.sessions.importers import read_session_file
from nova.testing import shared_data_dir, shared_recordings

# Below every long-prompt tier (Gemini's 200k, GPT-5.5's 272k): the table holds the base prices.
N = 100_000


def _files(root: Path) -> list[Path]:
    return shared_recordings(root)


def _billed_models() -> dict[str, str]:
    """Each model a shared recording's calls with usage name (the run's model for a call naming none),
    with one file that names it."""
    root = shared_data_dir()
    if not (root / "sessions").is_dir():
        pytest.skip(f"no shared session data at {root} (set NOVA_SHARED_DATA)")
    named: dict[str, str] = {}
    for path in _files(root):
        for run in read_session_file(path).runs():
            default = str(run.meta.get("model") or "")
            for m in run.messages:
                if m.role == "assistant" and usage_of(m) is not None and (model := call_model(m, default)):
                    named.setdefault(model, str(path.relative_to(root)))
    return named


def test_every_model_a_shared_recording_was_billed_at_has_a_price() -> None:
    named = _billed_models()
    # Claude (Anthropic and Bedrock names), OpenAI and Gemini recordings are all in the data.
    assert {"claude", "gpt", "gemini"} <= {family for model in named for family in ("claude", "gpt", "gemini")
                                          if family in model}
    unpriced = {model: where for model, where in named.items()
                if cost_usd(Usage(input_tokens=1, output_tokens=1), model) is None}
    assert unpriced == {}, f"no list price for {unpriced}: add them to nova.providers.pricing"


def _provider(info: ModelInfo) -> str:
    return "anthropic" if info.name.startswith("claude") else "google" if "gemini" in info.name else "openai"


def test_the_shared_models_prices_match_genai_prices() -> None:
    genai = pytest.importorskip("genai_prices", reason="genai-prices is not installed: nothing to compare with")
    infos = {info.name: info for model in _billed_models() if (info := model_info(model)) is not None}
    compared = set()
    for name, info in infos.items():
        provider = _provider(info)

        def genai_usd(**tokens: int) -> float:
            price = genai.calc_price(genai.Usage(**tokens), model_ref=name, provider_id=provider)  # noqa: B023
            return float(price.total_price)

        try:
            genai_usd(input_tokens=1)
        except LookupError:
            continue  # a name genai-prices does not list ("gemini-3-pro", which Gemini CLI records)
        compared.add(name)
        # genai-prices counts cached tokens inside input_tokens; Nova's Usage keeps them apart.
        assert genai_usd(input_tokens=N) == pytest.approx(N * info.input / 1e6), name
        assert genai_usd(output_tokens=N) == pytest.approx(N * info.output / 1e6), name
        assert genai_usd(input_tokens=N, cache_read_tokens=N) == pytest.approx(N * info.cache_read / 1e6), name
        assert genai_usd(input_tokens=N, cache_write_tokens=N) == pytest.approx(N * info.cache_write_5m / 1e6), name
    assert {"gpt-5.5", "gemini-3-pro-image", "claude-sonnet-4-5", "gemini-3-pro-preview"} <= compared


def test_gpt_5_5_and_gemini_3_pro_image_are_priced_at_their_list_prices() -> None:
    usage = Usage(input_tokens=10_000, cache_read_tokens=90_000, output_tokens=1_000)
    # GPT-5.5: 10,000 x 5 + 90,000 x 0.50 + 1,000 x 30 = 125,000 micro-dollars; a dated id is the same model.
    assert cost_usd(usage, "gpt-5.5") == pytest.approx(0.125)
    assert cost_usd(usage, "gpt-5.5-2026-04-23") == pytest.approx(0.125)
    # Gemini 3 Pro Image lists no cache discount: 100,000 x 2 + 1,000 x 12 = 212,000 micro-dollars.
    assert cost_usd(usage, "gemini-3-pro-image-preview") == pytest.approx(0.212)
    image = model_info("gemini-3-pro-image-preview")
    assert image is not None and image.window == 65_536
    # Still its own entry, not Gemini 3 Pro's (whose cached tokens cost a tenth).
    assert cost_usd(usage, "gemini-3-pro-preview") == pytest.approx(0.050)


def test_gemini_3_1_pro_and_3_flash_previews_are_priced_and_customtools_is_3_1_pro() -> None:
    usage = Usage(input_tokens=10_000, cache_read_tokens=10_000, output_tokens=1_000)
    assert cost_usd(usage, "gemini-3.1-pro-preview") == pytest.approx(0.020 + 0.002 + 0.012)
    assert cost_usd(usage, "gemini-3-flash-preview") == pytest.approx(0.005 + 0.0005 + 0.003)
    custom = model_info("gemini-3.1-pro-preview-customtools")
    assert custom is not None and custom == model_info("gemini-3.1-pro-preview") and custom.window == 1_048_576
    flash = model_info("gemini-3-flash-preview")
    assert flash is not None and flash.window == 1_048_576
