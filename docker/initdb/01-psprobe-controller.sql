-- Run once by the mariadb image on an empty datadir (/docker-entrypoint-initdb.d).
-- The controller's account with the privileges README "Controller" lists, nothing more.
CREATE USER IF NOT EXISTS 'psprobe_controller'@'%' IDENTIFIED BY 'psprobe-controller';
GRANT SELECT, UPDATE ON performance_schema.* TO 'psprobe_controller'@'%';
GRANT SELECT, CREATE, INSERT, DELETE ON psprobe.* TO 'psprobe_controller'@'%';
