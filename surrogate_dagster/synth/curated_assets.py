"""Synthesized sets curated like a source before they reach a mixture.

    orchestrator_traces[*] --\\
    exec_graded_pairs -------+-- + filtered_rows[*], minhash_signatures[*], benchmark_ngram_index
                             \\-> curated_orchestrator_traces -> agent SFT mixture
                                  curated_exec_graded_pairs   -> code DPO mixture

One asset per set (a set's upstream differs: the pairs are sampled from the stage 1.6
checkpoint, which trains on the traces' mixture, so one asset over both would be a cycle).
The logic is :func:`..curation.synth_rows.curate_synth_rows`.
"""

import json
import time

from dagster import (
    AllPartitionMapping,
    AssetDep,
    AssetExecutionContext,
    DataVersion,
    MaterializeResult,
    MetadataValue,
    asset,
)

from ..catalog.code_version import function_code_version
from ..curation.assets import (CROSS_SOURCE_POOL, CURATION, PROFILE_CURATION, benchmark_ngram_index,
                               curation_sanitizer, filtered_rows, minhash_signatures, minhash_spec,
                               run_step_scratch, signature_dir)
from ..curation.resource import CurationSettings
from ..curation.stage_io import SYNTH_STEP, curated_synth_asset, read_pointer, read_step, version_of, write_step
from ..metadata import counts_table
from ..resources import ObjectStoreResource
from ..runtime.host_pools import holds_pool_slot
from ..sources.assets import CATALOG as SOURCES
from ..storage.layout import BENCHMARK_INDEX, pointer, step_pointer
from .config import load_exec_graded_pairs, load_orchestrator_traces

_LOADERS = {"orchestrator_traces": load_orchestrator_traces, "exec_graded_pairs": load_exec_graded_pairs}
_ALL = AllPartitionMapping()


def _curated_synth(name: str):
    upstream = AssetDep(name, partition_mapping=_ALL) if name == "orchestrator_traces" else AssetDep(name)

    @asset(name=curated_synth_asset(name), group_name="synth",
           code_version=function_code_version(__name__, "_curated_synth", sections_of="CURATION",
                                              profile_section=("curation", PROFILE_CURATION)),
           deps=[upstream, AssetDep(filtered_rows, partition_mapping=_ALL),
                 AssetDep(minhash_signatures, partition_mapping=_ALL), benchmark_ngram_index],
           kinds={"parquet"}, pool=CROSS_SOURCE_POOL,
           description=f"{name.replace('_', ' ').capitalize()} after sanitize, exact and near dedup "
                       f"against every source, and benchmark decontamination.")
    @holds_pool_slot
    def _asset(context: AssetExecutionContext, object_store: ObjectStoreResource,
               curation: CurationSettings) -> MaterializeResult:
        from ..curation.decontam import BenchmarkIndex, Decontaminator
        from ..curation.synth_rows import curate_synth_rows

        store = object_store.get_store()
        rows = _LOADERS[name](store)
        idx_ptr = json.loads(store.get_bytes(pointer(BENCHMARK_INDEX)))
        decont = Decontaminator(BenchmarkIndex.from_bytes(store.get_bytes(idx_ptr["key"])),
                                min_matches=CURATION.decontamination.min_matches)
        t0 = time.monotonic()
        context.log.info(f"{name}: curating {len(rows)} synthesized rows against {len(SOURCES.names)} sources")
        with run_step_scratch(context, curation, curated_synth_asset(name)) as scratch:
            res = curate_synth_rows(
                name, rows,
                sanitizer=curation_sanitizer(tuple(CURATION.sanitize.categories), curation.ner_model,
                                             curation.model_source()),
                source_rows=lambda s: read_step(store, "filtered", s)[1],
                source_signatures={s: signature_dir(store, curation, s) for s in SOURCES.names},
                priority=SOURCES.names, spec=minhash_spec(), threshold=CURATION.minhash.threshold,
                decontaminator=decont, work_dir=scratch,
                workers=curation.workers, chunk_rows=curation.chunk_rows)
        filtered_versions = [read_pointer(store, "filtered", s)["version"] for s in SOURCES.names]
        # The kept rows' content names the output; the sources and index it was judged against
        # name the decisions.
        version = version_of(json.dumps(res.kept, sort_keys=True, default=str), filtered_versions,
                             idx_ptr["version"])
        write_step(store, SYNTH_STEP, name, version, res.kept, res.dropped,
                   summary={"dropped": dict(res.reasons), "findings": dict(res.findings)})
        context.log.info(f"{name}: kept {len(res.kept)}/{len(rows)}, dropped {dict(res.reasons)} "
                         f"in {time.monotonic() - t0:.1f}s")
        return MaterializeResult(
            data_version=DataVersion(version),
            metadata={"dagster/row_count": len(res.kept), "rows_in": len(rows), "rows_kept": len(res.kept),
                      "rows_dropped": len(res.dropped), "rows_changed_by_sanitizer": res.rows_changed,
                      "dropped_by_reason": MetadataValue.md(counts_table(res.reasons)),
                      "counts": MetadataValue.json(dict(res.reasons)),
                      "findings_by_category": MetadataValue.md(counts_table(res.findings, "category", "findings")),
                      "uri": store.uri(step_pointer(SYNTH_STEP, name))},
        )

    return _asset


CURATED_SYNTH_ASSETS = [_curated_synth(n) for n in _LOADERS]
