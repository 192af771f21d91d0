#pragma once
// The documents the subcommands print: typed study results (core/study.hpp) turned into titled
// fields, tables and notes, which render() writes as table, markdown, CSV or JSON. The JSON keys and
// CSV columns here are the CLI contract.
#include <string>

#include "mlaplan/core/hardware.hpp"
#include "mlaplan/core/engine_memory.hpp"
#include "mlaplan/core/explain.hpp"
#include "mlaplan/core/serving.hpp"
#include "mlaplan/core/study.hpp"
#include "mlaplan/io/table.hpp"

namespace mlaplan {

// The roofline a command costs with, and where its efficiencies came from.
struct RooflineUsed {
  HardwareSpec hw;
  DType compute = DType::bf16;
  Efficiency eta;
  Roofline rf;
};

// "64 x 1 tokens after 8191, 2 x 2048 tokens after 0"
std::string describe(const Workload& w);

// The engines' columns of a crossover table, three per policy in the given order (the first
// query each expands at, its worst penalty, and where), and one row's cells for them.
void add_engine_columns(Table& t, const std::vector<EnginePolicy>& policies, bool expands_column_for_people);
void add_engine_cells(std::vector<Value>& row, const CrossoverRow& c);

// --explain: the derivation as a table (quantity, formula, values, result), appended to a document.
void add_explain_table(Document& doc, const std::vector<ExplainStep>& steps);

Document models_document();  // the bundled models with their key figures
Document gpus_document();    // the bundled GPUs
Document kv_document(const ModelSpec& m, const KvStudy& st);
Document capacity_document(const ModelSpec& m, const HardwareSpec& hw, const CapacityStudy& st, const std::string& reserve_note);
// `capacity --engine`: the engine's memory budget line by line and what the engine would log.
Document engine_capacity_document(const ModelSpec& m, const HardwareSpec& hw, const Parallelism& par, KvDtype kv, const EngineCapacity& e,
                                  std::int64_t context);
Document cost_document(const ModelSpec& m, const RooflineUsed& r, const Workload& w, const CostStudy& st);
Document crossover_document(const ModelSpec& m, const RooflineUsed& r, const CrossoverSweepSpec& spec, const CrossoverStudy& st);
// `step`: one serving step of the whole model, by component and by layer kind, with the memory check.
Document step_document(const ModelSpec& m, const RooflineUsed& r, const StepRequest& req, const StepResult& st, const std::string& engine);
// A step's time by component (the step document's and the report's table).
Table step_components_table(const StepResult& st);
// Plan rows as a table, and the Pareto rows of a plan by rising TPOT.
Table plan_rows_table(const std::string& name, const std::string& title, const std::vector<const PlanRow*>& rows);
std::vector<const PlanRow*> pareto_rows(const PlanResult& st);
// `plan`: the Pareto layouts, each layout's best batch under the targets, the best and the fewest GPUs for a rate.
Document plan_document(const ModelSpec& m, const RooflineUsed& r, const PlanRequest& req, const PlanResult& st, const std::string& engine);
// `plan --sequences`: the fewest GPUs that hold them.
Document memory_plan_document(const ModelSpec& m, const HardwareSpec& hw, const CapacityRequest& base, std::int64_t sequences,
                              const std::vector<MemoryPlanRow>& rows);

}  // namespace mlaplan
