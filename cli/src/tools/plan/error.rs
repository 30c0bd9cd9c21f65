//! Why a plan could not be made: arguments that describe no on-sale, or a data file that does
//! not say what a plan needs. Nothing else can fail: a plan is arithmetic.

#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error("invalid arguments: {0}")]
    InvalidArguments(String),

    #[error("cli/src/tools/plan/aws_figures.json does not parse")]
    FiguresUnreadable(#[source] serde_json::Error),

    #[error("cli/src/tools/plan/aws_figures.json: {figure} {problem}")]
    FigureWithoutProvenance { figure: String, problem: String },

    #[error("cannot write the plan as JSON")]
    Json(#[source] serde_json::Error),
}
