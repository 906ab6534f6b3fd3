# Reference values for metacog_metrics.polychoric from psych::polychoric and polycor::polychor.
# Run: Rscript tests/reference/make_polychoric_reference.R > tests/reference/polychoric_reference.json
suppressMessages({library(psych); library(polycor)})
options(mc.cores = 1)
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

# --- Edge cases ---------------------------------------------------------------------------------
# (1) psych decides global = FALSE by the highest code (after shifting every code by the smallest
# of all), not by the number of distinct codes: three models of three distinct codes each, one of
# them gapped (0, 2, 4) or shifted (1, 2, 3), go per pair; a gapped model of two codes whose
# highest code is everyone's (0, 2) keeps the global thresholds.
set.seed(20261205)
n <- 300
f <- rnorm(n)
lat <- function(l) l * f + sqrt(1 - l^2) * rnorm(n)
three <- function(l, cuts) as.integer(cut(lat(l), c(-Inf, cuts, Inf))) - 1L
a <- three(0.7, c(-0.5, 0.5))
b <- three(0.6, c(-0.3, 0.6))
d <- three(0.8, c(-0.8, 0.2))
codes <- list(gapped = cbind(a, 2L * b, d), shifted = cbind(a, b + 1L, d),
              two_codes_same_top = cbind(a, 2L * (lat(0.6) > 0.2), d))
rule <- lapply(codes, function(x) {
  w <- NULL
  r <- withCallingHandlers(polychoric(x, smooth = FALSE, correct = 0.5)$rho,
                           warning = function(e) {w <<- c(w, conditionMessage(e));
                                                  invokeRestart("muffleWarning")})
  list(levels = unname(x), rho = unname(r),
       global = !any(grepl("global set to FALSE", w)))
})
# (2) Where the zero-cell correction pushes a pair's cumulative shares to 1 or past it before its
# last level, psych is undefined: its matrix call stops ("missing value where TRUE/FALSE needed")
# and one pair (psych:::polyc) gives NA. The project then estimates the pair without the
# correction, as polycor's two-step estimator does: polychor(table, ML = FALSE) is the reference.
# The tables are simulated (bivariate normal, true rho 0.3 / 0.6 / 0.85, 40-120 items, 5 x 3
# levels with Dirichlet(0.7) shares): every table where the correction breaks the thresholds is
# kept, with psych's value (NA) and polycor's, and the bias of polycor's against the truth.
set.seed(20261206)
one_pair <- function(x, y) {
  xy <- cbind(x, y)
  top <- max(xy, na.rm = TRUE) + 1L
  res <- tryCatch(suppressWarnings(
    psych:::polyc(x + 1L, y + 1L, NULL, NULL, global = FALSE, correct = 0.5,
                  gminx = 1, gmaxx = top, gminy = 1, gmaxy = top)$rho),
    error = function(e) NA_real_)
  if (is.null(res) || length(res) == 0) NA_real_ else res
}
breaks_thresholds <- function(t) {
  t <- t[rowSums(t) > 0, colSums(t) > 0, drop = FALSE]
  fixed <- t / sum(t)
  fixed[fixed == 0] <- 0.5 / sum(t)
  cr <- cumsum(rowSums(fixed)); cc <- cumsum(colSums(fixed))
  any(cr[-length(cr)] >= 1) || any(cc[-length(cc)] >= 1)
}
# polycor's optimise meets NA likelihoods near rho = +-1 on some of these tables (it warns "NA/Inf
# replaced by maximum positive value" and can stop short of the boundary): kept, and marked.
two_step <- function(t) {
  warned <- FALSE
  v <- withCallingHandlers(polychor(t, ML = FALSE), warning = function(e) {
    warned <<- TRUE; invokeRestart("muffleWarning")})
  list(rho = v, warned = warned)
}
broken <- list(); n_tables <- 0L
for (truth in c(0.3, 0.6, 0.85)) for (rep in 1:400) {
  m <- sample(40:120, 1)
  z1 <- rnorm(m)
  z <- cbind(z1, truth * z1 + sqrt(1 - truth^2) * rnorm(m))
  cx <- qnorm(cumsum(prop.table(rgamma(5, 0.7)))[-5])
  cy <- qnorm(cumsum(prop.table(rgamma(3, 0.7)))[-3])
  x <- findInterval(z[, 1], cx); y <- findInterval(z[, 2], cy)
  t <- table(x, y)
  if (min(dim(t)) < 2) next
  n_tables <- n_tables + 1L
  if (!breaks_thresholds(unclass(t))) next
  ts <- two_step(t)
  broken[[length(broken) + 1]] <- list(
    truth = truth, levels = unname(cbind(x, y)), psych = one_pair(x, y),
    polycor = ts$rho, polycor_warned = ts$warned)
}
est <- sapply(broken, function(b) b$polycor); tru <- sapply(broken, function(b) b$truth)
bias <- lapply(c(0.3, 0.6, 0.85), function(v) list(truth = v, n = sum(tru == v),
                                                  bias = mean(est[tru == v] - v)))
# (3) A matrix with such a pair: psych's matrix call stops, so each pair is referenced alone
# (psych:::polyc as polychoric calls it; polycor's two-step where psych gives NA).
set.seed(20261207)
n <- 70
f <- rnorm(n)
lat <- function(l) l * f + sqrt(1 - l^2) * rnorm(n)
mat_case <- NULL
for (attempt in 1:500) {
  x <- cbind(as.integer(cut(lat(0.9), c(-Inf, -1.6, -0.6, 0.6, 1.6, Inf))) - 1L,
             as.integer(cut(lat(0.9), c(-Inf, -1.1, 1.7, Inf))) - 1L,
             as.integer(cut(lat(0.6), c(-Inf, 0, Inf))) - 1L,
             as.integer(cut(lat(0.7), c(-Inf, -0.4, 0.4, Inf))) - 1L)
  x[matrix(runif(length(x)) < 0.1, nrow(x))] <- NA
  ok <- complete.cases(x[, 1:2])
  if (!breaks_thresholds(unclass(table(x[ok, 1], x[ok, 2])))) next
  r <- diag(4); fell_back <- matrix(FALSE, 4, 4)
  for (i in 1:3) for (j in (i + 1):4) {
    v <- one_pair(x[, i], x[, j])
    if (is.na(v)) {
      both <- complete.cases(x[, c(i, j)])
      v <- two_step(table(x[both, i], x[both, j]))$rho
      fell_back[i, j] <- fell_back[j, i] <- TRUE
    }
    r[i, j] <- r[j, i] <- v
  }
  stops <- tryCatch({suppressWarnings(polychoric(x, smooth = FALSE)); "no error"},
                    error = function(e) conditionMessage(e))
  mat_case <- list(levels = unname(x), rho = unname(r), fallback = unname(fell_back),
                   psych_matrix_call = stops)
  break
}
# (4) psych refuses codes that span more than max.cat = 8 values.
too_many <- tryCatch({polychoric(cbind(0:8, c(0:7, 0))); "no error"},
                     error = function(e) conditionMessage(e))

to_json <- function(v) {
  if (is.list(v)) {
    if (!is.null(names(v))) return(paste0("{", paste0('"', names(v), '": ', sapply(v, to_json),
                                                      collapse = ", "), "}"))
    return(paste0("[", paste(sapply(v, to_json), collapse = ", "), "]"))
  }
  if (is.matrix(v)) return(paste0("[", paste(apply(v, 1, function(r) to_json(as.vector(r))),
                                            collapse = ", "), "]"))
  if (is.character(v)) return(paste0("\"", gsub("\"", "'", v), "\""))
  if (is.logical(v) && !any(is.na(v))) {
    f <- ifelse(v, "true", "false")
    return(if (length(v) == 1) f else paste0("[", paste(f, collapse = ", "), "]"))
  }
  f <- ifelse(is.na(v), "null", trimws(formatC(v, digits = 15, format = "g")))
  if (length(v) == 1 && !is.matrix(v)) return(f)
  paste0("[", paste(f, collapse = ", "), "]")
}
cat(to_json(list(
  source = paste("psych", packageVersion("psych"), "polycor", packageVersion("polycor")),
  psych_polychoric = cases, polycor_polychor = tabout, psych_polychoric_mixed = mixed,
  threshold_rule = rule,
  fallback_tables = list(n_tables = n_tables, n_broken = length(broken), bias = bias,
                         tables = broken),
  fallback_matrix = mat_case, max_cat_error = too_many)), "\n")
