# kraft-chaos: the two commands a user needs are `make run` and `make test`.
# Both set up everything themselves: the venv and packages, the Docker engine
# (scripts/ensure-docker.sh), a Java >= 17 runtime for Spark and Kafka
# (scripts/ensure-java.sh), Maven for Kafka's jars (scripts/ensure-maven.sh), a JDK for the
# Kafka Java client that --client java compiles per release (scripts/ensure-jdk.sh), sshd for the
# ssh backend's tests (scripts/ensure-sshd.sh), headless Chromium for the results browser's tests
# (scripts/ensure-chromium.sh) and the node images (built on first use, cached).

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

# empty: `kraft-chaos run`'s defaults, the default schedule (harness/config/schedules.py)
RUN_ARGS ?=
# where the nodes run: docker, netns (namespaces on this host, as root; no engine needed) or
# auto (empty: kraft-chaos run's default, docker when an engine answers, else netns), or ssh
# with HOSTS=hosts.toml (one host per node, reached over SSH; see clusters/ssh_hosts.py)
CLUSTER ?=
HOSTS ?=
# the system under test: kraft (our quorum) or kafka (Apache Kafka: 5 controllers, 3 brokers)
DB ?= kraft
# `make run DB=kafka`: topic creations through the brokers for 120 s of partitions, kills and
# pauses of the controllers, one at a time, half of them aimed at the active controller
KAFKA_RUN_ARGS := --db kafka --workload metadata --time-limit 120 \
	--nemesis partition:isolate-leader+leader-minority+random-halves+bridge,kill:leader+one+minority,pause:leader+one \
	--nemesis-mode serial --nemesis-interval 6 --nemesis-duration 8
ANALYZE_ARGS ?= store

.PHONY: run test test-slow unit bench analyze engine spark maven jdk venv fuse sshd chromium image clean teardown

run: venv $(if $(filter netns ssh,$(CLUSTER)),,engine) spark $(if $(filter kafka,$(DB)),maven jdk)
	$(VENV)/bin/kraft-chaos run $(if $(CLUSTER),--cluster $(CLUSTER)) $(if $(HOSTS),--hosts $(HOSTS)) $(if $(filter kafka,$(DB)),$(KAFKA_RUN_ARGS)) $(RUN_ARGS)

# The default suite: unit tests and short real runs on each backend (about 15 minutes on 2 cores).
test: venv engine spark maven jdk sshd chromium
	$(PY) -m pytest -q -ra --durations=15 -m "not slow"

# Long real runs: every catalogued --unsafe bug caught under its schedule, every variant of the
# disk-loss timeline on both targets, and the longer runs of one feature each (power loss, voter
# changes, packet delay, kv, the queue, Kafka under faults, Spark on real runs) (about an hour).
test-slow: venv engine spark maven jdk sshd
	$(PY) -m pytest -q -ra -m slow

unit: venv
	$(PY) -m pytest -q -m "not docker"

# DB=kafka: Apache Kafka's quorum beside ours (first leader, CreateTopics vs appends, failover),
# and the transactional clients side by side (JVM start, send/poll/commit latency, transaction version).
# harness.bench.backends: cluster start-up and first leader on docker beside netns.
# harness.bench.analyze: analyze vs check on a store of BENCH_ANALYZE_RUNS runs (default 200).
# harness.bench.txn_checker: Jepsen's Kafka workload checker on a 1M-micro-op history (< 60 s, < 2 GB).
# harness.bench.simulate: kraft-chaos simulate's speed (BENCH_SIM_SEEDS schedules, default 200)
# beside the bare cores, and the time to detect each --unsafe switch.
bench: venv engine spark $(if $(filter kafka,$(DB)),maven jdk)
ifeq ($(DB),kafka)
	$(PY) -m harness.bench.targets
	$(PY) -m harness.bench.txn_clients
else
	$(PY) -m harness.bench.linearizability
	$(PY) -m harness.bench.quorum
	$(PY) -m harness.bench.backends
	$(PY) -m harness.bench.check_memory
	$(PY) -m harness.bench.txn_checker
	$(PY) -m harness.bench.spark
	$(PY) -m harness.bench.analyze
	$(PY) -m harness.bench.simulate --switches
endif

# Every stored run under the store root in ANALYZE_ARGS checked as Spark jobs
# (local[*]; add --master to use a cluster), with a summary and trend plots.
analyze: venv spark
	$(VENV)/bin/kraft-chaos analyze $(ANALYZE_ARGS)

venv: $(STAMP)
	@ls checkers/linearizability/_wgl*.so >/dev/null 2>&1 || $(PY) -m pip install -q -e '.[test]'

# pyfuse3 (clusters/lazyfs, the power-loss fault) builds against libfuse3-dev
$(STAMP): pyproject.toml checkers/linearizability/_wgl.c | fuse
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "kraft-chaos needs python3 >= 3.11, found " + sys.version.split()[0])'
	@test -x $(PY) || $(PYTHON) -m venv $(VENV) || { echo "cannot create $(VENV): install python3-venv" >&2; exit 1; }
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	@touch $(STAMP)

engine:
	@bash scripts/ensure-docker.sh

# FUSE 3 for the lazyfs power-loss filesystem: fuse3, libfuse3-dev (pyfuse3 builds against it), /dev/fuse.
fuse:
	@bash scripts/ensure-fuse.sh

# Debian's sshd and sudo, for the ssh backend's tests (they start their own sshd in namespaces).
sshd:
	@bash scripts/ensure-sshd.sh

# Debian's chromium and chromium-driver: `kraft-chaos serve`'s pages tested in headless Chromium.
chromium:
	@bash scripts/ensure-chromium.sh

# Maven resolves Apache Kafka's jars (--db kafka; targets/kafka/pom.xml).
maven:
	@bash scripts/ensure-maven.sh

# javac >= 17: the Java client (--client java) is compiled against each release's kafka-clients
# when a run or test first needs it, and cached (targets/kafka/java_build.py).
jdk:
	@bash scripts/ensure-jdk.sh

# PySpark 4 needs a Java >= 17 runtime.
spark:
	@bash scripts/ensure-java.sh

image: venv engine
	PYTHON=$(PY) bash scripts/build-node-image.sh

teardown: venv
	$(VENV)/bin/kraft-chaos teardown $(if $(HOSTS),--hosts $(HOSTS))

clean:
	rm -rf $(VENV) build *.egg-info
