# Reference values for metacog_metrics.polychoric from psych::polychoric and polycor::polychor.
# Run: Rscript tests/reference/make_polychoric_reference.R > tests/reference/polychoric_reference.json
suppressMessages({library(psych); library(polycor)})
set.seed(20261202)
cut_levels <- function(z, k) as.integer(cut(z, quantile(z, seq(0, 1, length.out = k + 1)),
                                            include.lowest = TRUE)) - 1L
make_data <- function(n, m, k, load, na_share) {
  f <- rnorm(n)
  x <- sapply(seq_len(m), function(j) cut_levels(load[j] * f + sqrt(1 - load[j]^2) * rnorm(n), k))
  x[matrix(runif(n * m) < na_share, n, m)] <- NA
  x
}
cases <- list()
specs <- list(list(n = 300, m = 5, k = 5, na = 0.0), list(n = 400, m = 6, k = 4, na = 0.25),
              list(n = 120, m = 4, k = 5, na = 0.4))
for (s in specs) {
  x <- make_data(s$n, s$m, s$k, seq(0.3, 0.85, length.out = s$m), s$na)
  r <- suppressWarnings(polychoric(x, smooth = FALSE, correct = 0.5, global = TRUE))$rho
  cases[[length(cases) + 1]] <- list(levels = x, rho = unname(r))
}
# Unequal numbers of levels (psych then sets global = FALSE: each pair's thresholds from its own
# table, zero cells replaced by correct = 0.5), skewed with sparse end levels, and NA: the shape
# of per-model levels of verbalised confidence.
skewed_cut <- function(z, probs) as.integer(cut(z, c(-Inf, quantile(z, probs), Inf))) - 1L
mixed <- list()
mspecs <- list(
  list(n = 400, na = 0.3, probs = list(c(0.02, 0.06, 0.2), c(0.1), c(0.2, 0.4, 0.6, 0.8),
                                       c(0.01, 0.5), c(0.05, 0.15))),
  list(n = 250, na = 0.0, probs = list(c(0.5), c(0.03, 0.1, 0.3, 0.6), c(0.9), c(0.25, 0.75))),
  list(n = 600, na = 0.45, probs = list(c(0.005, 0.02, 0.08), c(0.04), c(0.3, 0.7), c(0.15),
                                        c(0.01, 0.03, 0.1, 0.4), c(0.6))))
for (s in mspecs) {
  m <- length(s$probs)
  f <- rnorm(s$n)
  load <- seq(0.4, 0.85, length.out = m)
  x <- sapply(seq_len(m), function(j)
    skewed_cut(load[j] * f + sqrt(1 - load[j]^2) * rnorm(s$n), s$probs[[j]]))
  x[matrix(runif(s$n * m) < s$na, s$n, m)] <- NA
  r <- suppressWarnings(polychoric(x, smooth = FALSE, correct = 0.5))$rho
  mixed[[length(mixed) + 1]] <- list(levels = x, rho = unname(r))
}
tables <- list(matrix(c(58, 52, 1, 26, 58, 3, 8, 12, 9), 3, byrow = TRUE),
               matrix(c(20, 10, 5, 4, 8, 12, 9, 6, 2, 7, 15, 22), 3, byrow = TRUE),
               matrix(c(30, 12, 9, 25), 2, byrow = TRUE))
tabout <- lapply(tables, function(t) list(table = t, rho = polychor(t, ML = FALSE)))
to_json <- function(v) {
  if (is.list(v)) {
    if (!is.null(names(v))) return(paste0("{", paste0('"', names(v), '": ', sapply(v, to_json),
                                                      collapse = ", "), "}"))
    return(paste0("[", paste(sapply(v, to_json), collapse = ", "), "]"))
  }
  if (is.matrix(v)) return(paste0("[", paste(apply(v, 1, function(r) to_json(as.vector(r))),
                                            collapse = ", "), "]"))
  if (is.character(v)) return(paste0("\"", v, "\""))
  f <- ifelse(is.na(v), "null", trimws(formatC(v, digits = 15, format = "g")))
  if (length(v) == 1 && !is.matrix(v)) return(f)
  paste0("[", paste(f, collapse = ", "), "]")
}
cat(to_json(list(
  source = paste("psych", packageVersion("psych"), "polycor", packageVersion("polycor")),
  psych_polychoric = cases, polycor_polychor = tabout, psych_polychoric_mixed = mixed)), "\n")
