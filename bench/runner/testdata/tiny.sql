-- The tiny test workload's table (bench/runner/tiny_workload_testing.h).
CREATE TABLE account (
  a_id INT PRIMARY KEY,
  balance INT NOT NULL
);
