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
  psych_polychoric = cases, polycor_polychor = tabout)), "\n")
