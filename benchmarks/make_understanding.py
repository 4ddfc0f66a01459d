"""How well `taskloom make` understands requests: exact skill paths on held-out requests.

    .venv/bin/python benchmarks/make_understanding.py       # the held-out set: numbers only
    .venv/bin/python benchmarks/make_understanding.py \
        --set benchmarks/data/make_requests_dev6.jsonl --show 30   # a dev set, with its misses
    .venv/bin/python benchmarks/make_understanding.py --parser llm --model NAME \
        --base-url http://127.0.0.1:8080/v1    # or $TASKLOOM_LLM_MODEL, $OPENAI_BASE_URL

Each line of the set is a request written apart from the skill texts (and never used to
tune them), labelled with the skill path it asks for (`path`, in execution order), or
with `expect`: `no-match` (nothing taskloom can make) or `refuse` (the network, real hosts,
harm). For each request: understand it (offline: the default embedding model and rules; with
`--parser llm`, a model's reading, cached under $TASKLOOM_CACHE, counted when it fell back
to the offline parser), then
generate a task of the chosen path (procedural, no sandbox), as `make` does. Prints the
exact-path accuracy (the task's skills are exactly those asked for, every action
covered), skill recall, the two-action subset, the no-match and refusal answers, and the
confusion pairs (asked → chosen). Baseline, in the same run: the path of the single
skill nearest the whole request, as `make` chose before it read actions.

The held-out set (`make_requests.jsonl`, 215 requests) was written by someone who saw only
the skill ids, names and one-line summaries and the chains the generator can build; its
misses and confusion pairs have never been read, so they are not printed unless asked
(`--show N`), and reading them makes it one more dev set. Tune on the dev sets
(`make_requests_dev*.jsonl`, 1,026 requests; dev3 was the held-out set until its misses were
read).
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter
from pathlib import Path

SET = Path(__file__).parent / "data" / "make_requests.jsonl"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", type=Path, default=SET, help="labelled requests (JSONL)")
    parser.add_argument("--show", type=int, default=0,
                        help="misses and confusion pairs to print (never on the held-out set "
                             "if it is to stay held out)")
    parser.add_argument("--parser", choices=("offline", "llm"), default="offline",
                        help="who reads the actions (llm: --model or $TASKLOOM_LLM_MODEL)")
    parser.add_argument("--model", help="model of --parser llm")
    parser.add_argument("--base-url", help="its OpenAI-compatible server")
    args = parser.parse_args()
    from taskloom.config import LLMConfig
    from taskloom.errors import NoDraft, NoMatch
    from taskloom.generators.backends import skill_graph
    from taskloom.generators.procedural.backend import ProceduralGenerator, blueprint_for
    from taskloom.generators.procedural.primitives import PRIMITIVES
    from taskloom.generators.request import understand
    from taskloom.minilm import load_fast_embedder

    rows = [json.loads(line) for line in args.set.read_text().splitlines() if line.strip()]
    graph = skill_graph(())
    embedder = load_fast_embedder()  # as `make` does
    generator = ProceduralGenerator(graph)
    allowed = set(PRIMITIVES) & set(graph.skills)
    llm = None
    if args.parser == "llm":
        from taskloom.generators.llm.intent import intent_model

        llm = intent_model(LLMConfig(model=args.model, base_url=args.base_url))
    fallbacks = 0
    exact = recall_hit = recall_all = baseline = 0
    pairs_exact = pairs = answered = negatives = 0
    confusion: Counter[tuple[str, str]] = Counter()
    misses = []
    started = time.perf_counter()
    for row in rows:
        text, want = row["request"], tuple(row.get("path", ()))
        try:
            request = understand(text, graph, embedder, allowed=allowed, llm=llm)
        except NoMatch as exc:
            got, reason = ("refuse" if "will not make" in str(exc) else "no-match"), str(exc)
        else:
            missed = request.uncovered
            fallbacks += bool(request.note)
            path = tuple(m.id for m in request.skills)
            got, reason = (path if not missed else "no-match"), ""
            if not missed:
                try:
                    task = generator.generate(blueprint_for(graph, path, seed=0)).task
                    got = tuple(task.config.metadata["skills"])
                except NoDraft as exc:
                    got, reason = "no-draft", str(exc)
            if want:
                baseline += request.nearest[0].id == want[0] and len(want) == 1
        if not want:
            negatives += 1
            answered += got == row["expect"]
            if got != row["expect"]:
                misses.append((text, row["expect"], got, reason))
            continue
        hit = got == want
        exact += hit
        if len(want) > 1:
            pairs += 1
            pairs_exact += hit
        chosen = got if isinstance(got, tuple) else ()
        recall_all += len(want)
        recall_hit += len(set(want) & set(chosen))
        if not hit:
            misses.append((text, " -> ".join(want), " -> ".join(chosen) or got, reason))
            for index, skill in enumerate(want):
                other = chosen[index] if index < len(chosen) else "(none)"
                if other != skill:
                    confusion[(skill, other)] += 1
    labelled = len(rows) - negatives
    seconds = time.perf_counter() - started
    print(f"{len(rows)} requests ({labelled} with a skill path, {pairs} of them two actions; "
          f"{negatives} no-match or refuse) in {seconds:.1f} s")
    print(f"exact path:   {exact}/{labelled} = {exact / labelled:.1%}")
    print(f"skill recall: {recall_hit}/{recall_all} = {recall_hit / recall_all:.1%}")
    singles = labelled - pairs
    print(f"one action:   {exact - pairs_exact}/{singles} = "
          f"{(exact - pairs_exact) / max(singles, 1):.1%}")
    print(f"two actions:  {pairs_exact}/{pairs} = {pairs_exact / max(pairs, 1):.1%}")
    print(f"no-match and refuse answered right: {answered}/{negatives}")
    if llm:
        print(f"parser: {llm.model}; fell back to the offline parser on {fallbacks}")
    print(f"baseline (nearest single skill, single-action requests): {baseline}/"
          f"{labelled - pairs} = {baseline / max(labelled - pairs, 1):.1%}")
    if not args.show:
        return
    print("\nconfusion pairs (asked -> chosen):")
    for (want, got), count in confusion.most_common(15):
        print(f"  {count}  {want} -> {got}")
    print(f"\nmisses (first {args.show}):")
    for text, want, got, reason in misses[:args.show]:
        why = f" ({reason[:140]})" if reason else ""
        print(f"  {text!r}\n     asked {want}; got {got}{why}")


if __name__ == "__main__":
    main()
