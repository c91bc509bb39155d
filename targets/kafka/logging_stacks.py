"""The two logging stacks Kafka's KRaft releases use, as data: log4j 1 (reload4j) before 4.0,
log4j2 from 4.0 (:mod:`targets.kafka.releases` says which release has which).

A :class:`LoggingStack` names the pom that resolves its jars from Maven
(``targets/kafka/poms/``), the jars that mark it in a distribution's ``libs/``, our two
config files (the server's and the command-line tools') and the JVM option that points
the logging library at one of them. Both stacks' server configs write ``server.log``
(everything but the controller) and ``controller.log`` (``org.apache.kafka.controller``,
``kafka.controller``) into ``${kafka.logs.dir}``, each rolled at 100 MB, as Kafka's own
``config/log4j.properties`` (3.x) and ``config/log4j2.yaml`` (4.x) do; the tools' configs
send warnings and errors to stderr. The log4j2 ones are properties files, so that no
jackson-yaml is needed at start-up.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path

POMS = Path(__file__).with_name("poms")
#: where the configs live on a node (the image's and the deployed host files' ``config/``)
CONFIG_DIR = "/opt/kafka/config"

LOG4J2_SERVER = """\
# kraft-chaos: Kafka server logging (log4j2 properties format)
status = warn
name = kraft-chaos-kafka
property.logDir = ${sys:kafka.logs.dir:-/var/lib/kafka/logs}
property.pattern = [%d] %p %m (%c)%n

appender.server.type = RollingFile
appender.server.name = ServerAppender
appender.server.fileName = ${logDir}/server.log
appender.server.filePattern = ${logDir}/server.log.%i
appender.server.layout.type = PatternLayout
appender.server.layout.pattern = ${pattern}
appender.server.policies.type = Policies
appender.server.policies.size.type = SizeBasedTriggeringPolicy
appender.server.policies.size.size = 100MB
appender.server.strategy.type = DefaultRolloverStrategy
appender.server.strategy.max = 2

appender.controller.type = RollingFile
appender.controller.name = ControllerAppender
appender.controller.fileName = ${logDir}/controller.log
appender.controller.filePattern = ${logDir}/controller.log.%i
appender.controller.layout.type = PatternLayout
appender.controller.layout.pattern = ${pattern}
appender.controller.policies.type = Policies
appender.controller.policies.size.type = SizeBasedTriggeringPolicy
appender.controller.policies.size.size = 100MB
appender.controller.strategy.type = DefaultRolloverStrategy
appender.controller.strategy.max = 2

rootLogger.level = INFO
rootLogger.appenderRef.server.ref = ServerAppender

logger.controller.name = org.apache.kafka.controller
logger.controller.level = INFO
logger.controller.additivity = false
logger.controller.appenderRef.controller.ref = ControllerAppender

logger.oldcontroller.name = kafka.controller
logger.oldcontroller.level = INFO
logger.oldcontroller.additivity = false
logger.oldcontroller.appenderRef.controller.ref = ControllerAppender

logger.request.name = kafka.request.logger
logger.request.level = WARN
"""

LOG4J2_TOOLS = """\
# kraft-chaos: Kafka command-line tools logging
status = warn
name = kraft-chaos-kafka-tools
appender.stderr.type = Console
appender.stderr.name = Stderr
appender.stderr.target = SYSTEM_ERR
appender.stderr.layout.type = PatternLayout
appender.stderr.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = WARN
rootLogger.appenderRef.stderr.ref = Stderr
"""

LOG4J1_SERVER = """\
# kraft-chaos: Kafka server logging (log4j 1.2 / reload4j properties format)
log4j.rootLogger=INFO, serverAppender

log4j.appender.serverAppender=org.apache.log4j.RollingFileAppender
log4j.appender.serverAppender.File=${kafka.logs.dir}/server.log
log4j.appender.serverAppender.MaxFileSize=100MB
log4j.appender.serverAppender.MaxBackupIndex=2
log4j.appender.serverAppender.layout=org.apache.log4j.PatternLayout
log4j.appender.serverAppender.layout.ConversionPattern=[%d] %p %m (%c)%n

log4j.appender.controllerAppender=org.apache.log4j.RollingFileAppender
log4j.appender.controllerAppender.File=${kafka.logs.dir}/controller.log
log4j.appender.controllerAppender.MaxFileSize=100MB
log4j.appender.controllerAppender.MaxBackupIndex=2
log4j.appender.controllerAppender.layout=org.apache.log4j.PatternLayout
log4j.appender.controllerAppender.layout.ConversionPattern=[%d] %p %m (%c)%n

log4j.logger.org.apache.kafka.controller=INFO, controllerAppender
log4j.additivity.org.apache.kafka.controller=false
log4j.logger.kafka.controller=INFO, controllerAppender
log4j.additivity.kafka.controller=false
log4j.logger.kafka.request.logger=WARN
"""

LOG4J1_TOOLS = """\
# kraft-chaos: Kafka command-line tools logging
log4j.rootLogger=WARN, stderr
log4j.appender.stderr=org.apache.log4j.ConsoleAppender
log4j.appender.stderr.Target=System.err
log4j.appender.stderr.layout=org.apache.log4j.PatternLayout
log4j.appender.stderr.layout.ConversionPattern=[%d] %p %m (%c)%n
"""


@dataclasses.dataclass(frozen=True)
class LoggingStack:
    """One logging stack. ``name``: ``log4j1`` or ``log4j2``; ``pom``: the pom under
    ``targets/kafka/poms/`` that resolves a release's jars with it; ``marker_jars``: file-name
    prefixes of which a distribution's ``libs/`` must hold at least one for the stack to
    run (checked on ``--kafka-dist``); ``server_file``/``tools_file``: our config files' names
    in ``/opt/kafka/config``, with texts ``server_text``/``tools_text``; ``property``: the
    JVM system property naming the config, its value prefixed with ``url_prefix``."""

    name: str
    pom: Path
    marker_jars: tuple[str, ...]
    server_file: str
    server_text: str
    tools_file: str
    tools_text: str
    property: str
    url_prefix: str

    def files(self) -> dict[str, bytes]:
        """``{path relative to /opt/kafka: bytes}`` of the two configs, e.g.
        ``{"config/log4j.properties": ..., "config/tools-log4j.properties": ...}``."""
        return {f"config/{self.server_file}": self.server_text.encode(),
                f"config/{self.tools_file}": self.tools_text.encode()}

    def server_option(self, config_dir: str = CONFIG_DIR) -> str:
        """The server JVM's option, e.g. ``-Dlog4j.configuration=file:/opt/kafka/config/log4j.properties``."""
        return f"-D{self.property}={self.url_prefix}{config_dir}/{self.server_file}"

    def tools_option(self, config_dir: str = CONFIG_DIR) -> str:
        """The command-line tools' JVM option (their config: warnings to stderr)."""
        return f"-D{self.property}={self.url_prefix}{config_dir}/{self.tools_file}"


LOG4J1 = LoggingStack("log4j1", POMS / "reload4j.xml", ("reload4j-", "log4j-1.2"),
                      "log4j.properties", LOG4J1_SERVER, "tools-log4j.properties", LOG4J1_TOOLS,
                      "log4j.configuration", "file:")
LOG4J2 = LoggingStack("log4j2", POMS / "log4j2.xml", ("log4j-core-",),
                      "log4j2.properties", LOG4J2_SERVER, "tools-log4j2.properties", LOG4J2_TOOLS,
                      "log4j2.configurationFile", "")
